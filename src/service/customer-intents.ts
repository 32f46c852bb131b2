/**
 * What the customer's screen asks of the kiosk: a QR scan, "next" and "try again", cancelling a tap,
 * the language, the camera's state and the screen's own errors. None needs a staff session.
 */
import type { SpeechAudio } from '../common/speech.js';
import type { SpeechService } from './speech-service.js';
import type { QrScannedResult, RetryResult } from '../common/kiosk-api.js';
import { engagementTextProblem, failsMdocPrefixRule } from '../kiosk/engagement-text.js';
import type { KioskConfig } from '../platform/config.js';
import { stripScannerTerminator } from '../kiosk/kiosk.js';
import type { Logger } from '../platform/log.js';
import type { CameraStatus } from './camera-status.js';
import type { DiagnosticsLog } from './diagnostics.js';
import type { KioskRuntime } from './kiosk-runtime.js';
import type { RendererErrorLog } from './renderer-errors.js';
import { VISIT_END_PHASES, WAITING_PHASES, type ScreenStateStream } from './screen-state.js';
import type { Args, Ok } from './service-options.js';

export interface CustomerIntentsOptions {
  readonly config: () => KioskConfig;
  /** Reads the configuration again and rebuilds the kiosk (a "try again" on a configuration error). */
  readonly reloadConfig: () => void;
  readonly runtime: Pick<KioskRuntime, 'kiosk' | 'devices' | 'running' | 'requestRebuild'>;
  readonly screen: Pick<ScreenStateStream, 'view' | 'publish' | 'chooseLanguage' | 'keepLanguageForRetry' | 'extendClearsAt'>;
  readonly camera: CameraStatus;
  readonly diagnostics: Pick<DiagnosticsLog, 'count'>;
  readonly rendererErrors: Pick<RendererErrorLog, 'report'>;
  /** The built-in voice and the screen's speech report (speech-service.ts). */
  readonly speech: Pick<SpeechService, 'synthesize' | 'report'>;
  readonly log: () => Logger;
}

export interface CustomerIntents {
  qrScanned(args: Args<'qrScanned'>): QrScannedResult;
  next(): Ok;
  retry(): RetryResult | Promise<RetryResult>;
  cancel(): { cancelled: boolean };
  moreTime(): { extended: boolean };
  setLanguage(args: Args<'setLanguage'>): Ok;
  reportCamera(args: Args<'reportCamera'>): Ok;
  reportError(args: Args<'reportError'>): Ok;
  synthesizeSpeech(args: Args<'synthesizeSpeech'>): Promise<SpeechAudio>;
  reportSpeech(args: Args<'reportSpeech'>): Ok;
}

export function customerIntents(options: CustomerIntentsOptions): CustomerIntents {
  const { runtime, screen } = options;

  const takeScan = (text: string): QrScannedResult => {
    const { requireMdocPrefix } = options.config().qr;
    const stripped = stripScannerTerminator(text);
    if (stripped.trim() === '') return { accepted: false, reason: 'empty' };
    if (failsMdocPrefixRule(stripped, requireMdocPrefix)) return { accepted: false, reason: 'not_mdoc' };
    // Cut short or damaged (a scanner dropped characters): say so, rather than spend a session on it.
    if (requireMdocPrefix && engagementTextProblem(stripped) !== undefined) return { accepted: false, reason: 'unreadable' };
    const { kiosk, devices } = runtime;
    // One rule for both ways in (issue 28): a scan is taken whenever a tap is. On an outcome, error or
    // "remove your phone" the core holds it until the outcome's minimum has passed, as it does a phone left
    // on the reader; only while a verification runs is it refused.
    const phase = screen.view.phase;
    if (!kiosk || !devices || !(WAITING_PHASES.has(phase) || VISIT_END_PHASES.has(phase)))
      return { accepted: false, reason: 'not_waiting' };
    // Unmodified: the core strips a scanner's terminator itself (`qr_scanned` carries the text as scanned).
    devices.qr.push(text);
    return { accepted: true };
  };

  return {
    qrScanned: (args) => {
      const result = takeScan(args.text);
      options.diagnostics.count(`scan.${args.source}.${result.accepted ? 'accepted' : result.reason}`);
      return result;
    },
    next: () => {
      runtime.kiosk?.dismiss();
      return { ok: true };
    },
    retry: () => {
      screen.keepLanguageForRetry();
      const { kiosk } = runtime;
      if (kiosk && screen.view.phase === 'offline') {
        // "Retry now" on Offline: the retry policy decides whether an attempt goes now; the screen is told what came of it.
        const { backendReplyMs } = options.config().timeouts;
        return kiosk.retryBackend(Math.min(2 * backendReplyMs + 1_000, 60_000)).then((attempt) => ({ ok: true as const, attempt }));
      }
      if (kiosk) {
        kiosk.retry();
        kiosk.dismiss();
      } else if (runtime.running) {
        // No kiosk (configuration error): read the configuration again, it may have been fixed.
        options.reloadConfig();
        runtime.requestRebuild('kiosk');
      }
      return { ok: true };
    },
    cancel: () => ({ cancelled: runtime.kiosk?.cancelTapAgain() ?? false }),
    moreTime: () => {
      const leftMs = runtime.kiosk?.moreTime();
      if (leftMs === undefined) return { extended: false };
      screen.extendClearsAt(leftMs);
      return { extended: true };
    },
    setLanguage: (args) => {
      screen.chooseLanguage(args.language);
      return { ok: true };
    },
    reportCamera: (args) => {
      const { changed, problem } = options.camera.report(args.state, args.detail);
      if (changed) {
        // On and off happen for every customer; only problems are worth the diagnostics' limited memory.
        const log = options.log();
        if (problem) log.warn({ event: 'camera_state', state: args.state }, 'camera problem reported by the screen');
        else log.debug({ event: 'camera_state', state: args.state }, 'camera state reported by the screen');
        screen.publish();
      }
      return { ok: true };
    },
    reportError: (args) => {
      options.rendererErrors.report(args);
      return { ok: true };
    },
    synthesizeSpeech: (args) => options.speech.synthesize(args),
    reportSpeech: (args) => {
      options.speech.report(args);
      return { ok: true };
    },
  };
}
