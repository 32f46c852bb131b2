/**
 * The kiosk window's preload (bundled alone as CommonJS, `dist/app/preload.cjs`, as sandboxed preloads
 * must be: electronjs.org/docs/latest/tutorial/sandbox#preload-scripts). It exposes `window.kiosk` and
 * nothing else through the context bridge.
 */
import { contextBridge, ipcRenderer } from 'electron';
import { createKioskBridge } from './kiosk-bridge.js';

contextBridge.exposeInMainWorld('kiosk', createKioskBridge(ipcRenderer));
