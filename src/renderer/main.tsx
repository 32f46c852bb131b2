/** Entry point: connect to the kiosk (preload or browser host), set up i18n, forward errors, render the app. */
import { StrictMode } from 'react';
import { z } from 'zod';
import { createRoot } from 'react-dom/client';
import { I18nextProvider } from 'react-i18next';
import { App } from './App.js';
import { connectToKiosk } from './api/connect.js';
import { createErrorReporter, forwardWindowErrors } from './api/error-reporting.js';
import { KioskProvider } from './api/KioskContext.js';
import { AnnouncerProvider } from './components/announcer.js';
import { ScreenErrorBoundary } from './components/ScreenErrorBoundary.js';
import { createI18n } from './i18n/index.js';
import { prewarmPortraitDecoder } from './outcome/portrait-decoder.js';
import { sharedQrDecoder } from './qr/decoder-client.js';
import './styles/app.css';

// zod probes `new Function('')` to decide whether it may compile parsers; under our CSP (no 'unsafe-eval')
// that probe is refused and reported as a violation on every start. Parse without it.
z.config({ jitless: true });

// The decoders' wasm compiles while the customer reads the Ready screen, not when the first portrait arrives.
prewarmPortraitDecoder();
sharedQrDecoder();

const rootElement = document.getElementById('root');
if (!rootElement) throw new Error('index.html has no #root element');

const i18n = createI18n('en');
const connection = connectToKiosk(window);

// The screen's own errors go to the kiosk's log (main side): script errors, unhandled rejections, and
// components that fail to render (the boundary, which also restarts the screen).
const reportError = createErrorReporter((error) => ('api' in connection ? connection.api.reportError(error) : Promise.resolve()));
forwardWindowErrors(window, reportError);

createRoot(rootElement).render(
  <StrictMode>
    <I18nextProvider i18n={i18n}>
      <ScreenErrorBoundary report={reportError}>
        <KioskProvider connection={connection}>
          <AnnouncerProvider>
            <App />
          </AnnouncerProvider>
        </KioskProvider>
      </ScreenErrorBoundary>
    </I18nextProvider>
  </StrictMode>,
);
