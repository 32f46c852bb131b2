/**
 * The kiosk screen: picks the customer screen from the core's phase, or a staff screen over it, and wires
 * the intents. It holds no protocol logic and no data beyond React state (docs/protocol.md §1).
 */
import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { CameraState, KioskApi, Language, ScanSource, ScreenState } from '../common/kiosk-api.js';
import { useKiosk } from './api/KioskContext.js';
import { addressRefused } from './api/socket-transport.js';
import { useHeldState } from './api/use-held-state.js';
import { LiveRegion } from './components/announcer.js';
import { useScannerWedge } from './qr/scanner-wedge.js';
import { useCameraStatus, type CameraStatus } from './qr/camera-status.js';
import { BleConnectingScreen } from './screens/BleConnectingScreen.js';
import { ConnectingScreen } from './screens/ConnectingScreen.js';
import { DisconnectedScreen } from './screens/DisconnectedScreen.js';
import { EngagingScreen } from './screens/EngagingScreen.js';
import { ErrorScreen } from './screens/ErrorScreen.js';
import { NeedsStaffScreen } from './screens/NeedsStaffScreen.js';
import { OfflineScreen } from './screens/OfflineScreen.js';
import { ReadyScreen, type ScanHint } from './screens/ReadyScreen.js';
import { RemovePhoneScreen } from './screens/RemovePhoneScreen.js';
import { ResultScreen } from './screens/ResultScreen.js';
import { customerScreenFor, type ScreenName } from './screens/screen-name.js';
import { StartingScreen } from './screens/StartingScreen.js';
import { StoppedScreen } from './screens/StoppedScreen.js';
import { TapAgainScreen } from './screens/TapAgainScreen.js';
import { TransferringScreen } from './screens/TransferringScreen.js';
import { WaitingScreen } from './screens/WaitingScreen.js';
import { SpeechBadge, useSpeech } from './speech/use-speech.js';
import { CounterActivity } from './staff/CounterActivity.js';
import { DiagnosticsScreen } from './staff/DiagnosticsScreen.js';
import { SettingsScreen } from './staff/SettingsScreen.js';
import { StaffPinScreen } from './staff/StaffPinScreen.js';
import { StaffShell, type StaffPage } from './staff/StaffShell.js';
import { StatusBar, TestModeBanner } from './staff/StatusBar.js';

/** How long the "not a mobile driving licence" hint stays on Ready. */
export const SCAN_HINT_MS = 5_000;

type StaffView = 'pin' | StaffPage;

/** Follows the kiosk's language: i18next, `<html lang>` and the document's title. */
function useLanguage(language: Language): void {
  const { i18n, t } = useTranslation();
  useEffect(() => {
    void i18n.changeLanguage(language);
    document.documentElement.lang = language;
  }, [i18n, language]);
  useEffect(() => {
    document.title = t('app.title');
  }, [t, language]);
}

/** Sends a scanned text unmodified; a text that is not an `mdoc:` engagement shows a hint for a while. */
type ScanOutcome = 'accepted' | 'not_mdoc' | 'empty' | 'unreadable' | 'not_waiting' | 'failed';

function useScans(api: KioskApi | null): { hint: ScanHint | null; scan: (text: string, source: ScanSource) => Promise<ScanOutcome> } {
  const [hint, setHint] = useState<ScanHint | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const scan = useCallback(
    async (text: string, source: ScanSource) => {
      if (!api) return 'failed' as const;
      try {
        const result = await api.qrScanned({ text, source });
        if (result.accepted) return 'accepted' as const;
        if (result.reason === 'not_mdoc' || result.reason === 'empty' || result.reason === 'unreadable') {
          setHint(result.reason);
          clearTimeout(timer.current);
          timer.current = setTimeout(() => setHint(null), SCAN_HINT_MS);
        }
        return result.reason;
      } catch {
        // Not connected or refused: the disconnected screen or the staff detail already says so.
        return 'failed' as const;
      }
    },
    [api],
  );
  return { hint, scan };
}

function CustomerScreen(props: {
  state: ScreenState;
  api: KioskApi;
  hint: ScanHint | null;
  onScan: (text: string) => void;
  camera: CameraStatus;
  onCameraState: (state: CameraState, detail?: string) => void;
}): ReactNode {
  const { state, api } = props;
  const next = (): void => void api.next({}).catch(() => undefined);
  const retry = (): void => void api.retry({}).catch(() => undefined);
  const cancel = (): void => void api.cancel({}).catch(() => undefined);
  const moreTime = (): void => void api.moreTime({}).catch(() => undefined);
  const chooseLanguage = (language: Language): void => void api.setLanguage({ language }).catch(() => undefined);
  switch (state.view.phase) {
    case 'starting':
      return <StartingScreen />;
    case 'connecting':
      return <ConnectingScreen />;
    case 'offline':
      return <OfflineScreen state={state} onRetry={() => api.retry({})} />;
    case 'config_error':
    case 'cannot_verify':
      return <NeedsStaffScreen state={state} />;
    case 'ready':
      return (
        <ReadyScreen
          state={state}
          camera={props.camera.shown}
          scanHint={props.hint}
          onScan={props.onScan}
          onCameraState={props.onCameraState}
          onLanguage={chooseLanguage}
        />
      );
    case 'engaging':
      return <EngagingScreen state={state} />;
    case 'awaiting_card':
      return <TapAgainScreen state={state} onCancel={cancel} />;
    case 'ble_connecting':
      return <BleConnectingScreen state={state} />;
    case 'transferring':
      return <TransferringScreen state={state} />;
    case 'result':
      // "Try again" (after "You declined to share") dismisses the outcome and keeps the language, as on an error.
      return <ResultScreen state={state} onNext={next} onTryAgain={retry} />;
    case 'error':
      // "Try again" re-arms now (and dismisses the error), as `retry` does on the host.
      return <ErrorScreen state={state} onTryAgain={retry} onMoreTime={moreTime} />;
    case 'remove_phone':
      return <RemovePhoneScreen afterFailure={state.view.prompt === 'remove_to_retry'} />;
    case 'stopped':
      return <StoppedScreen />;
  }
}

export function App(): ReactNode {
  const { t } = useTranslation();
  const { api, state, connection, missingToken, stale } = useKiosk();
  // What the customer screens draw: in-between screens held long enough to read (api/screen-hold.ts).
  const shownState = useHeldState(state) ?? state;
  const [staffView, setStaffView] = useState<StaffView | null>(null);
  useLanguage(state?.language ?? 'en');
  const { hint, scan } = useScans(api);
  // This screen's own camera: what the status bar and Ready say, whatever another browser reported.
  const camera = useCameraStatus();
  const reportLocalCamera = camera.report;
  const reportCamera = useCallback(
    (state: CameraState, detail?: string) => {
      reportLocalCamera(state);
      void api?.reportCamera(detail === undefined ? { state } : { state, detail: detail.slice(0, 300) }).catch(() => undefined);
    },
    [api, reportLocalCamera],
  );

  // An unlocked staff session never outlives the staff screens: leaving them (Lock, Cancel on the PIN
  // pad) locks, and so does finding the host unlocked while a customer screen shows (a reconnection, a
  // reload, a session opened elsewhere), so the next person at the counter finds no open settings.
  // While a lock is on its way the session already counts as locked here.
  const [locking, setLocking] = useState(false);
  const hostUnlocked = state?.staff.unlocked ?? false;
  const unlocked = hostUnlocked && !locking;
  const sendLock = useCallback(() => {
    if (!api) return;
    setLocking(true);
    // A lock that fails stays "locking": the PIN pad (not the settings) opens next, and unlocking clears it.
    void api.lock({}).catch(() => undefined);
  }, [api]);
  useEffect(() => {
    if (!hostUnlocked) setLocking(false);
    else if (!locking && staffView === null) sendLock();
  }, [hostUnlocked, locking, staffView, sendLock]);
  const leaveStaff = (): void => {
    setStaffView(null);
    sendLock();
  };

  // Back to the customer screens as soon as the staff session ends (timeout, Lock, lost connection).
  useEffect(() => {
    if (!unlocked && (staffView === 'settings' || staffView === 'diagnostics')) setStaffView(null);
  }, [unlocked, staffView]);
  useEffect(() => {
    if (!state && staffView !== null) setStaffView(null);
  }, [state, staffView]);

  const onCameraScan = useCallback((text: string) => void scan(text, 'camera'), [scan]);
  const onWedgeScan = useCallback((text: string) => void scan(text, 'scanner'), [scan]);
  useScannerWedge({ enabled: state !== null && staffView === null, onScan: onWedgeScan });

  const onUnlocked = useCallback(() => {
    setLocking(false);
    setStaffView('settings');
  }, []);
  const pasteScan = async (text: string): Promise<string> => {
    switch (await scan(text, 'paste')) {
      case 'accepted':
        // Staff asked for this verification: they see it on the customer screen, not "code sent" behind
        // the settings while the outcome comes and goes unseen. Leaving the staff screens locks them.
        leaveStaff();
        return t('settings.paste.accepted');
      case 'not_mdoc':
        return t('settings.paste.notMdoc');
      case 'unreadable':
        return t('settings.paste.unreadable');
      case 'not_waiting':
        return t('settings.paste.notWaiting');
      case 'empty':
        return t('settings.paste.empty');
      case 'failed':
        return t('disconnected.title');
    }
  };

  let name: ScreenName;
  let content: ReactNode;
  if (!state || !api) {
    name = 'disconnected';
    content = <DisconnectedScreen connection={connection} missingToken={missingToken} />;
  } else if (staffView === 'pin') {
    name = 'staff_pin';
    content = <StaffPinScreen api={api} staff={{ ...state.staff, unlocked }} onUnlocked={onUnlocked} onCancel={leaveStaff} />;
  } else if (staffView !== null && unlocked) {
    name = staffView;
    content = (
      <StaffShell page={staffView} staff={state.staff} onPage={setStaffView} onLock={leaveStaff}>
        <CounterActivity state={state} onShow={leaveStaff} />
        {staffView === 'settings' ? (
          <SettingsScreen api={api} state={state} onScan={pasteScan} />
        ) : (
          <DiagnosticsScreen api={api} language={state.language} cameraDeviceId={state.camera.deviceId} />
        )}
      </StaffShell>
    );
  } else if (stale) {
    name = 'waiting';
    content = <WaitingScreen connection={connection} />;
  } else {
    const customerState = shownState ?? state;
    name = customerScreenFor(customerState);
    content = (
      <CustomerScreen state={customerState} api={api} hint={hint} onScan={onCameraScan} camera={camera} onCameraState={reportCamera} />
    );
  }
  // Speech for a customer who cannot see the screen: what the shown customer screen says (silent on staff screens).
  const speech = useSpeech({ api, state: staffView === null ? shownState : state, screen: name, camera: camera.shown });
  // The customer may change the language wherever they read: on Ready it is part of the screen, elsewhere
  // in the bar (not on the staff screens, nor while no kiosk state is shown).
  const languageInBar = state !== null && api !== null && staffView === null && !stale && name !== 'ready' && name !== 'disconnected';
  const chooseLanguage = (language: Language): void => void api?.setLanguage({ language }).catch(() => undefined);

  return (
    <div className={`app${state?.testMode ? ' app--test-mode' : ''}`}>
      {state?.testMode ? <TestModeBanner /> : null}
      <main data-screen={name} className={`main main--${name}`}>
        <LiveRegion />
        {/* Keyed by screen: a new screen is a new subtree (focus moves to its heading; nothing carries over). */}
        <div key={name} className="screen-host">
          {content}
        </div>
      </main>
      <StatusBar
        state={staffView === null ? shownState : state}
        language={languageInBar ? { current: state.language, onChoose: chooseLanguage } : undefined}
        camera={camera.shown}
        staffView={staffView === 'settings' || staffView === 'diagnostics'}
        staffEnabled={api !== null && state !== null}
        speechBadge={<SpeechBadge text={speech.badge} />}
        addressInvalid={missingToken || addressRefused(connection)}
        onStaff={() => setStaffView(unlocked ? 'settings' : 'pin')}
      />
    </div>
  );
}
