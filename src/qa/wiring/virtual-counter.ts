/**
 * A counter with no hardware, as a library: the kiosk's device ports (virtual NFC reader, QR scan queue,
 * BLE central and peripheral) and a virtual phone on one virtual radio, the phone's mDL issued under the
 * QA PKI, and the embedded mock backend trusting it. The relay CLI, the demo, the phone page and the
 * browser tests all set up a counter through this one function.
 *
 *   const counter = await createVirtualCounter({ phone: 'iphone' });
 *   createKiosk(config with counter.backend.url and apiKey, counter.rig.devices, log);
 *   counter.rig.tap();                                  // the phone on the reader
 *   await counter.reconfigurePhone({ consent: 'decline' });
 *
 * The phone can be changed while the kiosk runs: behaviours that only steer a presentation (consent,
 * delays, drops, device authentication) apply to the next tap or QR at once; a new credential variant,
 * portrait format or phone profile needs a new phone, which joins the same radio (the kiosk's ports stay
 * the same) while the old one is stopped and powered off.
 */
import type { VirtualNfcReaderOptions } from '../devices/virtual-nfc-reader.js';
import { createVirtualRig, type VirtualRig } from '../devices/virtual-rig.js';
import { createHciPhone, createHciRig, type HciStacks } from '../hci/hci-rig.js';
import type { PhoneRadio } from '../sim/virtual-wallet/phone-radio.js';
import { issueTestCredential, type TestCredential } from '../sim/virtual-wallet/credential.js';
import type { TestPki } from '../sim/virtual-wallet/pki.js';
import type { PhoneProfileName } from '../sim/virtual-wallet/profiles.js';
import {
  VirtualPhone,
  type AbortReason,
  type EngagementKind,
  type PhoneBehaviour,
  type PhoneSetup,
  type PresentationOutcome,
} from '../sim/virtual-wallet/virtual-phone.js';
import { startEmbeddedBackend, type EmbeddedBackend, type EmbeddedBackendOptions } from './embedded-backend.js';
import {
  PhoneSettingsChangeSchema,
  deviceAvailability,
  fromPhoneBehaviour,
  needsNewPhone,
  toPhoneBehaviour,
  underAgeBirthDate,
  type PhoneSettings,
  type PhoneSettingsChange,
} from './phone-settings.js';
import { defaultQaPkiDir, loadOrCreateQaPki } from './qa-pki.js';

/** Which Bluetooth roles the kiosk can take on the counter. */
export type KioskBleRoles = 'both' | 'central' | 'peripheral' | 'none';

export interface VirtualCounterOptions {
  readonly phone?: PhoneProfileName;
  readonly behaviour?: PhoneBehaviour;
  /** Default `both`. */
  readonly kioskBle?: KioskBleRoles;
  /** Issue the phone's mDL under this PKI (tests); otherwise the QA PKI of `pkiDir`. */
  readonly pki?: TestPki;
  /** The QA PKI's directory (default `defaultQaPkiDir()`), shared with a separately started mock backend. */
  readonly pkiDir?: string;
  /** Start the embedded mock backend trusting the PKI (default true). */
  readonly backend?: boolean | EmbeddedBackendOptions;
  readonly nfc?: VirtualNfcReaderOptions;
  /** How long the phone waits for the reader's end after answering (the phone's default otherwise). */
  readonly phoneEndTimeoutMs?: number;
  /** A name for the radio devices (logs). */
  readonly name?: string;
  /**
   * Put the counter on an emulated Bluetooth radio instead (src/qa/hci): the kiosk's noble and bleno
   * adapters on their own controllers, the phone's wallet on noble and bleno on two more.
   */
  readonly hci?: HciStacks;
}

/** The counter's hands and ports, whichever radio it is on. */
export interface CounterRig extends Pick<VirtualRig, 'devices' | 'nfc' | 'qr' | 'showQr' | 'tap' | 'retap' | 'lift' | 'stop'> {
  /** The phone at the counter now. */
  readonly phone: VirtualPhone<PhoneRadio>;
}

export type PhoneAction = 'tap' | 'retap' | 'lift' | 'show_qr';

/** What the phone did, without any of the holder's data (element names only). */
export interface PhoneOutcomeSummary {
  readonly kind: PresentationOutcome['kind'];
  readonly engagement: EngagementKind;
  readonly bleMode: string | undefined;
  readonly reason: AbortReason | undefined;
  readonly detail: string | undefined;
  /** `namespace/element` of each element the phone shared. */
  readonly sharedElements: readonly string[];
}

export interface PhoneActivity {
  /** Increases with every action, so a poller sees a change. */
  readonly seq: number;
  readonly action: PhoneAction;
  readonly at: number;
  /** Set once the presentation this action started or continued has ended. */
  readonly outcome: PhoneOutcomeSummary | undefined;
}

export interface VirtualCounter {
  /** The kiosk's ports and the phone's hands; `rig.phone` is always the current phone. */
  readonly rig: CounterRig;
  /** The in-memory radio's rig (its kiosk device, for noble and bleno on radio bindings); absent on HCI. */
  readonly radioRig: VirtualRig | undefined;
  /** The embedded mock backend (undefined with `backend: false`). */
  readonly backend: EmbeddedBackend | undefined;
  readonly pki: TestPki;
  readonly settings: PhoneSettings;
  /** The phone shows a fresh QR engagement on its screen (nothing is scanned); returns its text. */
  presentQr(): string;
  /** The current QR presentation's text, while it runs. */
  readonly currentQr: string | undefined;
  readonly lastActivity: PhoneActivity | undefined;
  /** Applies a change (validated); resolves with the settings in force. Serialised with other changes. */
  reconfigurePhone(change: PhoneSettingsChange): Promise<PhoneSettings>;
  stop(): Promise<void>;
}

/** What the phone did, without the holder's data (element names only). */
export function summarisePhoneOutcome(outcome: PresentationOutcome): PhoneOutcomeSummary {
  return {
    kind: outcome.kind,
    engagement: outcome.engagement,
    bleMode: outcome.bleMode,
    reason: outcome.kind === 'aborted' ? outcome.reason : undefined,
    detail: outcome.kind === 'aborted' ? outcome.detail : undefined,
    sharedElements:
      outcome.kind === 'shared' ? Object.entries(outcome.shared).flatMap(([ns, elements]) => elements.map((e) => `${ns}/${e}`)) : [],
  };
}

export async function createVirtualCounter(options: VirtualCounterOptions = {}): Promise<VirtualCounter> {
  const pki = options.pki ?? (await loadOrCreateQaPki(options.pkiDir ?? defaultQaPkiDir())).pki;
  const name = options.name ?? 'counter';
  const roles = options.kioskBle ?? 'both';
  let settings = fromPhoneBehaviour(options.phone ?? 'android', options.behaviour ?? {});

  const credentials = new Map<string, Promise<TestCredential>>();
  const credentialFor = (s: PhoneSettings): Promise<TestCredential> => {
    const key = `${s.credential}/${s.portrait}/${s.holder}`;
    let issued = credentials.get(key);
    if (issued === undefined) {
      issued = issueTestCredential({
        pki,
        ...(s.holder === 'under_21' ? { holder: { birth_date: underAgeBirthDate(new Date()) } } : {}),
        validity: s.credential === 'expired' ? 'expired' : 'valid',
        ...(s.credential === 'tampered' ? { tamper: true } : {}),
        portraitFormat: s.portrait,
      });
      credentials.set(key, issued);
      issued.catch(() => credentials.delete(key));
    }
    return issued;
  };

  let phoneCount = 0;
  const phoneOptions = async (s: PhoneSettings) => ({
    profile: s.profile,
    behaviour: toPhoneBehaviour(s),
    credential: await credentialFor(s),
    ...(options.phoneEndTimeoutMs === undefined ? {} : { endTimeoutMs: options.phoneEndTimeoutMs }),
  });
  const first = await phoneOptions(settings);
  const rigOptions = {
    profile: first.profile,
    behaviour: first.behaviour,
    credential: first.credential,
    ble: { central: roles === 'both' || roles === 'central', peripheral: roles === 'both' || roles === 'peripheral' },
    ...(options.nfc ? { nfc: options.nfc } : {}),
    ...(options.phoneEndTimeoutMs === undefined ? {} : { phoneEndTimeoutMs: options.phoneEndTimeoutMs }),
  };
  const { hci } = options;
  let base: CounterRig;
  let radioRig: VirtualRig | undefined;
  let replacePhone: (next: PhoneSetup) => Promise<void>;
  if (hci) {
    const hciRig = await createHciRig(hci, rigOptions);
    base = hciRig;
    replacePhone = async (next) => hciRig.replacePhone(await createHciPhone(hci, next));
  } else {
    const virtual = await createVirtualRig({ name, ...rigOptions });
    base = radioRig = virtual;
    replacePhone = async (next) =>
      virtual.replacePhone(await VirtualPhone.create({ ...next, radio: virtual.radio, name: `${name}-phone-${++phoneCount}` }));
  }
  let backend: EmbeddedBackend | undefined;
  if (options.backend !== false) {
    backend = await startEmbeddedBackend([pki.iaca.der], typeof options.backend === 'object' ? options.backend : {});
  }

  let seq = 0;
  let last: PhoneActivity | undefined;
  let stopped = false;

  /** Records an action; `watch` follows the current presentation's outcome into the record. */
  const record = (action: PhoneAction, watch: boolean): void => {
    const entry: { -readonly [K in keyof PhoneActivity]: PhoneActivity[K] } = { seq: ++seq, action, at: Date.now(), outcome: undefined };
    last = entry;
    const presentation = base.phone.presentation;
    if (!watch || presentation === undefined) return;
    void presentation.outcome.then((outcome) => {
      entry.outcome = summarisePhoneOutcome(outcome);
      // Replaced records stay as they were; the latest one is what QA sees.
      if (last === entry) last = { ...entry };
    });
  };

  const presentQr = (): string => {
    const text = base.phone.presentQr();
    record('show_qr', true);
    return text;
  };

  // The rig's hands, with each action recorded for the phone page.
  const rig: CounterRig = {
    devices: base.devices,
    nfc: base.nfc,
    qr: base.qr,
    stop: () => base.stop(),
    get phone() {
      return base.phone;
    },
    showQr: () => {
      const text = presentQr();
      base.qr.push(text);
      return text;
    },
    tap: () => {
      base.tap();
      record('tap', true);
    },
    retap: () => {
      base.retap();
      record('retap', true);
    },
    lift: () => {
      base.lift();
      record('lift', false);
    },
  };

  // The kiosk's device ports as the QA switches say (at once: the kiosk sees it before the next tap).
  const unconfigured = { usable: false, reason: 'not_configured' } as const;
  const applyDevices = (s: PhoneSettings): void => {
    const { nfc, bluetooth } = deviceAvailability(s);
    base.nfc.setAvailability(nfc);
    radioRig?.central.setAvailability(roles === 'both' || roles === 'central' ? bluetooth : unconfigured);
    radioRig?.peripheral.setAvailability(roles === 'both' || roles === 'peripheral' ? bluetooth : unconfigured);
  };

  let changes: Promise<unknown> = Promise.resolve();
  const reconfigure = async (change: PhoneSettingsChange): Promise<PhoneSettings> => {
    if (stopped) throw new Error('the virtual counter was stopped');
    const next: PhoneSettings = { ...settings, ...PhoneSettingsChangeSchema.parse(change) };
    if (next.bluetooth !== 'on' && radioRig === undefined) throw new Error('the Bluetooth switch needs the virtual radio (not an HCI rig)');
    if (needsNewPhone(settings, next)) {
      await replacePhone(await phoneOptions(next));
    } else {
      base.phone.setBehaviour(toPhoneBehaviour(next));
    }
    if (next.nfcReader !== settings.nfcReader || next.bluetooth !== settings.bluetooth) applyDevices(next);
    settings = next;
    return settings;
  };

  return {
    rig,
    radioRig,
    backend,
    pki,
    get settings() {
      return settings;
    },
    presentQr,
    get currentQr() {
      const presentation = base.phone.presentation;
      return presentation?.engagement === 'qr' && last?.action === 'show_qr' && last.outcome === undefined ? presentation.qr : undefined;
    },
    get lastActivity() {
      return last;
    },
    reconfigurePhone(change) {
      const run = changes.then(() => reconfigure(change));
      changes = run.catch(() => undefined);
      return run;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await changes;
      await rig.stop();
      await backend?.stop();
    },
  };
}
