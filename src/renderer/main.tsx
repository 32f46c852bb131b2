/** Entry point: connect to the kiosk (preload or browser host), set up i18n, render the app. */
import { StrictMode } from 'react';
import { z } from 'zod';
import { createRoot } from 'react-dom/client';
import { I18nextProvider } from 'react-i18next';
import { App } from './App.js';
import { connectToKiosk } from './api/connect.js';
import { KioskProvider } from './api/KioskContext.js';
import { AnnouncerProvider } from './components/announcer.js';
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

createRoot(rootElement).render(
  <StrictMode>
    <I18nextProvider i18n={i18n}>
      <KioskProvider connection={connection}>
        <AnnouncerProvider>
          <App />
        </AnnouncerProvider>
      </KioskProvider>
    </I18nextProvider>
  </StrictMode>,
);
