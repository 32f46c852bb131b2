/** Entry point: connect to the kiosk (preload or browser host), set up i18n, render the app. */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { I18nextProvider } from 'react-i18next';
import { App } from './App.js';
import { connectToKiosk } from './api/connect.js';
import { KioskProvider } from './api/KioskContext.js';
import { AnnouncerProvider } from './components/announcer.js';
import { createI18n } from './i18n/index.js';
import './styles/app.css';

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
