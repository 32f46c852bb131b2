/**
 * The virtual phone: a holder wallet on the virtual radio with an NFC tag, for tests, QA and the demo.
 *
 *   const phone = await VirtualPhone.create({ profile: 'android', radio });
 *   const qr = phone.presentQr();           // BLE starts now (advertising and/or scanning)
 *   const tag = phone.tag();                // or: an NFC tap; BLE starts when the handover is done
 *   const outcome = await phone.outcome;    // what happened on the phone
 *   await phone.stop();                     // nothing left running
 *
 * One presentation at a time: each `presentQr()` / `tag()` starts a new one (fresh EDeviceKey and BLE UUID
 * for each engagement) and ends the previous one (`superseded`). A presentation ends when the reader ends the
 * session after the phone answered (State 0x02, ISO/IEC 18013-5 Table 13, or SessionData {status: 20},
 * session termination in 18013-5 §9.1.1; or the link going away), when it fails, or after `endTimeoutMs` without the
 * reader's end; the phone then stops advertising/scanning and closes its link.
 *
 * Behaviours and how they show on the wire:
 * - `consent: 'approve'` (default): SessionData {data: DeviceResponse, status: 20} (as Multipaz's
 *   `mdocPresentment.kt` answers).
 * - `consent: 'decline'`: SessionData {status: 20} without data — the session ends with no response.
 * - `consentDelayMs`: the answer waits this long after the request was decrypted.
 * - `nfcFieldDropAtApdu`: the n-th APDU (1-based) gets no answer; the reader port reports the field lost
 *   (`RemovedCard` / `NotTransacted`) and the phone must be tapped again; the tag restarts on the new field.
 * - `bleDropAfterChunks`: the phone ends the BLE link after sending k chunks of its answer.
 * - `neverSubscribe`: in mdoc central client mode the phone connects and reads the Ident, then does nothing
 *   more (no subscription, no State 0x01): the reader's timers must end it.
 * - `wrongIdent`: in mdoc central client mode the phone expects another Ident, so it disconnects after
 *   reading the reader's (correct) Ident, before writing State 0x01.
 * - `credential: 'expired' | 'tampered'`: the answer carries an MSO whose validity ended yesterday, or a
 *   requested element changed after signing (its digest no longer matches; the first requested element
 *   the phone holds, the portrait only when nothing else is asked for — see holder-session.ts).
 * - `portrait: 'jpeg2000'`: the credential's portrait is a lossless JPEG 2000 JP2 file instead of a JPEG.
 * - `deviceAuth: 'mac'`: deviceMac (COSE_Mac0 with EMacKey, ISO/IEC 18013-5 §9.1.3.5) instead of
 *   deviceSignature; unset, the profile's kind (profiles.ts; `multipaz` answers with deviceMac, the others sign).
 */
import type { KeyObject } from 'node:crypto';
import type { MdocContext } from '@owf/mdoc';
import { deviceEngagementToQr } from '../iso/device-engagement.js';
import { createNodeMdocContext } from '../iso/mdoc-context.js';
import type { MdocBleMode } from '../iso/handover.js';
import { SESSION_STATUS, decodeSessionData } from '../iso/session-messages.js';
import type { Handover } from '../iso/session-transcript.js';
import type { RadioDevice, VirtualRadio } from '../radio/virtual-radio.js';
import { BleHolder, type BleCloseReason } from './ble-holder.js';
import type { PhoneRadio } from './phone-radio.js';
import { getTestCredential, type TestCredential } from './credential.js';
import { createEngagementKeys, nfcDeviceEngagement, qrDeviceEngagement, type EngagementKeys } from './engagement.js';
import {
  HolderSession,
  type DeviceAuthMethod,
  type ElementsByNamespace,
  type HolderResult,
  type RequestedDocument,
} from './holder-session.js';
import { answerHandoverRequest, staticHandoverSelect, type BleAssignment } from './nfc-engagement.js';
import { HandoverTag, type CompletedHandover, type VirtualNfcTag } from './nfc-tag.js';
import { resolvePhoneProfile, type PhoneProfile, type PhoneProfileName } from './profiles.js';
import { errorText } from '../../../common/error-text.js';

export interface PhoneBehaviour {
  /** Default `approve`. */
  readonly consent?: 'approve' | 'decline';
  /** Wait before answering a request, ms (default 0). */
  readonly consentDelayMs?: number;
  /** APDU number(s), 1-based per presentation, at which the NFC field drops. */
  readonly nfcFieldDropAtApdu?: number | readonly number[];
  /** Drop the BLE link after this many chunks of the phone's answer. */
  readonly bleDropAfterChunks?: number;
  /** Expect a wrong Ident in mdoc central client mode (→ the phone aborts). */
  readonly wrongIdent?: boolean;
  /** Connect and read the Ident, then never subscribe (central client mode). */
  readonly neverSubscribe?: boolean;
  /** Which cached test credential to hold when none is given (default `valid`). */
  readonly credential?: 'valid' | 'expired' | 'tampered';
  /** Its portrait's encoding when none is given (default `jpeg`). */
  readonly portrait?: 'jpeg' | 'jpeg2000';
  /** Default: the profile's (`signature` unless it says otherwise). */
  readonly deviceAuth?: DeviceAuthMethod;
}

export type EngagementKind = 'qr' | 'nfc_static' | 'nfc_negotiated';

export type AbortReason =
  | 'stopped'
  | 'superseded'
  | 'ble_drop'
  | 'ble_disconnected'
  | 'ident_mismatch'
  | 'transport_error'
  | 'no_common_transport'
  | 'session_encryption_error'
  | 'cbor_decoding_error'
  | 'reader_terminated';

/**
 * How the session ended after the phone's answer: the reader's State 0x02 or SessionData {status: 20}
 * (the two ways ISO/IEC 18013-5 ends a BLE session), the link going away, or `endTimeoutMs` without either.
 */
export type SessionEnding = 'state_end' | 'session_termination' | 'disconnected' | 'timeout';

interface OutcomeBase {
  readonly engagement: EngagementKind;
  /** The BLE mode whose link won, when one did. */
  readonly bleMode: MdocBleMode | undefined;
}

export type PresentationOutcome =
  | (OutcomeBase & {
      readonly kind: 'shared';
      readonly requested: readonly RequestedDocument[];
      /** Issuer-signed elements in the DeviceResponse, per namespace. */
      readonly shared: ElementsByNamespace;
      readonly deviceAuth: DeviceAuthMethod;
      readonly ending: SessionEnding;
      /** The element the phone altered in its answer (tampered credential), if any. */
      readonly tampered?: { readonly namespace: string; readonly element: string };
    })
  | (OutcomeBase & { readonly kind: 'declined'; readonly requested: readonly RequestedDocument[]; readonly ending: SessionEnding })
  | (OutcomeBase & { readonly kind: 'aborted'; readonly reason: AbortReason; readonly detail: string });

export interface VirtualPhoneOptions extends PhoneSetup {
  readonly radio: VirtualRadio;
  /** Radio device name (default `phone-<profile>`). */
  readonly name?: string;
}

/** A phone's options apart from where its Bluetooth lives. */
export interface PhoneSetup {
  readonly profile: PhoneProfileName | PhoneProfile;
  readonly behaviour?: PhoneBehaviour;
  /** Default: the cached test credential of `behaviour.credential`. */
  readonly credential?: TestCredential;
  /** How long to wait for the reader's end after answering (default 5000 ms). */
  readonly endTimeoutMs?: number;
  readonly context?: MdocContext;
}

/** Deterministic engagement material for tests (the published transcripts use a fixed key and UUID). */
export interface PresentationOptions {
  readonly eDeviceKey?: KeyObject;
  readonly serviceUuid?: string;
}

/** What tests and QA can see of the current presentation. */
export interface PresentationInfo {
  readonly engagement: EngagementKind;
  /** DeviceEngagement bytes (QR payload or HS record payload). */
  readonly deviceEngagement: Uint8Array;
  readonly eDeviceKeyBytes: Uint8Array;
  /** The phone's own UUID (QR, static HS, or an HS picking peripheral server mode). */
  readonly serviceUuid: string;
  /** The handover in the SessionTranscript (NFC: set once the HS was read). */
  readonly handover: Handover | undefined;
  readonly ble: BleAssignment | undefined;
  readonly bleMode: MdocBleMode | undefined;
  readonly qr: string | undefined;
  readonly outcome: Promise<PresentationOutcome>;
}

function isTermination(message: Uint8Array): boolean {
  try {
    return decodeSessionData(message).status === SESSION_STATUS.sessionTermination;
  } catch {
    return false;
  }
}

function dropNumbers(value: number | readonly number[] | undefined): readonly number[] {
  if (value === undefined) return [];
  const list = typeof value === 'number' ? [value] : value;
  for (const n of list) if (!Number.isInteger(n) || n < 1) throw new RangeError(`nfcFieldDropAtApdu must be positive integers, got ${n}`);
  return list;
}

class Presentation implements PresentationInfo {
  readonly engagement: EngagementKind;
  readonly deviceEngagement: Uint8Array;
  readonly keys: EngagementKeys;
  readonly outcome: Promise<PresentationOutcome>;
  qr: string | undefined;
  handover: Handover | undefined;
  ble: BleAssignment | undefined;
  bleMode: MdocBleMode | undefined;
  #resolve!: (outcome: PresentationOutcome) => void;
  #transport: BleHolder | undefined;
  #session: HolderSession | undefined;
  #answered: Extract<HolderResult, { kind: 'responded' | 'declined' | 'error' }> | undefined;
  #done = false;
  #closing: Promise<void> = Promise.resolve();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #wakeups = new Set<() => void>();

  constructor(
    private readonly phone: VirtualPhone<PhoneRadio>,
    /** The previous presentation's transport shutdown: ours starts after it (same radio device). */
    private readonly previousClosed: Promise<void>,
    engagement: EngagementKind,
    keys: EngagementKeys,
    deviceEngagement: Uint8Array,
  ) {
    this.engagement = engagement;
    this.keys = keys;
    this.deviceEngagement = deviceEngagement;
    this.outcome = new Promise<PresentationOutcome>((resolve) => (this.#resolve = resolve));
  }

  get serviceUuid(): string {
    return this.keys.serviceUuid;
  }

  get eDeviceKeyBytes(): Uint8Array {
    return this.keys.eDeviceKeyBytes;
  }

  get done(): boolean {
    return this.#done;
  }

  /** A method, so a check after an await is not narrowed away by TypeScript. */
  #isDone(): boolean {
    return this.#done;
  }

  /** Starts the BLE transport for the assignment (once per presentation). */
  startBle(assignment: BleAssignment): void {
    if (this.#done || this.#transport !== undefined) return;
    this.ble = assignment;
    const behaviour = this.phone.behaviour;
    const transport = new BleHolder({
      device: this.phone.device,
      ...assignment,
      eDeviceKeyBytes: this.keys.eDeviceKeyBytes,
      localName: this.phone.profile.localName,
      ...(behaviour.wrongIdent === true ? { wrongIdent: true } : {}),
      ...(behaviour.neverSubscribe === true ? { neverSubscribe: true } : {}),
      ...(behaviour.bleDropAfterChunks === undefined ? {} : { dropAfterChunks: behaviour.bleDropAfterChunks }),
      events: {
        onConnected: (mode) => {
          this.bleMode = mode;
        },
        onMessage: (message) => {
          // Not serialised: a reader message that arrives while the request waits for consent (e.g.
          // SessionData status 20) must reach the holder session at once.
          this.#onMessage(message).catch((error: unknown) => {
            this.finish({
              kind: 'aborted',
              reason: 'transport_error',
              detail: `handling a reader message failed: ${errorText(error)}`,
            });
          });
        },
        onStateEnd: () => this.#onReaderEnd('state_end', 'the reader ended the session (State 0x02) before its request was answered'),
        onClosed: (reason, detail) => this.#onClosed(reason, detail),
      },
    });
    this.#transport = transport;
    const delayMs = this.phone.profile.bleStartDelayMs ?? 0;
    this.previousClosed
      .then(async () => {
        // The profile's pause before the phone's BLE comes up (wallet-captures.ts); a presentation that
        // ended meanwhile never starts its transport.
        if (delayMs > 0) await this.#sleep(delayMs);
        if (this.#isDone()) return;
        await transport.start();
      })
      .catch((error: unknown) => {
        this.finish({
          kind: 'aborted',
          reason: 'transport_error',
          detail: `BLE could not start: ${errorText(error)}`,
        });
      });
  }

  async #onMessage(message: Uint8Array): Promise<void> {
    if (this.#done) return;
    if (this.#answered !== undefined) {
      // After the answer, SessionData {status: 20} ends the session like State 0x02 (ISO/IEC 18013-5 §9.1.1).
      if (isTermination(message)) this.#finishAnswered('session_termination');
      return;
    }
    this.#session ??= new HolderSession({
      eDevicePrivateKey: this.keys.eDeviceKey,
      deviceEngagement: this.deviceEngagement,
      handover: () => this.handover ?? { type: 'qr' },
      credential: this.phone.credential,
      deviceAuth: this.phone.behaviour.deviceAuth ?? this.phone.profile.deviceAuth ?? 'signature',
      consent: async () => {
        const behaviour = this.phone.behaviour;
        if ((behaviour.consentDelayMs ?? 0) > 0) await this.#sleep(behaviour.consentDelayMs ?? 0);
        return behaviour.consent ?? 'approve';
      },
      context: this.phone.context,
    });
    const reply = await this.#session.onMessage(message);
    if (this.#isDone()) return;
    const result = reply.result;
    if (result?.kind === 'terminated') {
      this.finish({
        kind: 'aborted',
        reason: 'reader_terminated',
        detail: `the reader ended the session (SessionData status ${String(result.status)}) before its request was answered`,
      });
      return;
    }
    if (reply.message === undefined || this.#transport === undefined) return;
    const sent = await this.#transport.send(reply.message);
    if (this.#isDone() || sent !== 'sent') return; // a drop or a lost link is reported by onClosed
    // Only a fully sent answer counts as given (a link lost halfway is an abort, not "shared").
    if (result !== undefined) this.#answered = result;
    // Answered: wait for the reader's end (State 0x02 or the link going away), bounded.
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#finishAnswered('timeout');
    }, this.phone.endTimeoutMs);
    this.#timers.add(timer);
  }

  #onReaderEnd(ending: SessionEnding, detailIfUnanswered: string): void {
    if (this.#done) return;
    if (this.#answered !== undefined) {
      this.#finishAnswered(ending);
      return;
    }
    this.finish({ kind: 'aborted', reason: 'reader_terminated', detail: detailIfUnanswered });
  }

  #onClosed(reason: BleCloseReason, detail: string): void {
    if (this.#done) return;
    if (reason === 'dropped') {
      this.finish({ kind: 'aborted', reason: 'ble_drop', detail });
      return;
    }
    if (reason === 'disconnected' && this.#answered !== undefined) {
      this.#finishAnswered('disconnected');
      return;
    }
    const map: Record<Exclude<BleCloseReason, 'dropped'>, AbortReason> = {
      disconnected: 'ble_disconnected',
      ident_mismatch: 'ident_mismatch',
      error: 'transport_error',
    };
    this.finish({ kind: 'aborted', reason: map[reason], detail });
  }

  #finishAnswered(ending: SessionEnding): void {
    const answered = this.#answered;
    if (answered === undefined) return;
    switch (answered.kind) {
      case 'responded':
        this.finish({
          kind: 'shared',
          requested: answered.requested,
          shared: answered.shared,
          deviceAuth: answered.deviceAuth,
          ending,
          ...(answered.tampered === undefined ? {} : { tampered: answered.tampered }),
        });
        return;
      case 'declined':
        this.finish({ kind: 'declined', requested: answered.requested, ending });
        return;
      case 'error':
        this.finish({
          kind: 'aborted',
          reason: answered.status === 10 ? 'session_encryption_error' : 'cbor_decoding_error',
          detail: `sent SessionData status ${answered.status}: ${answered.detail}`,
        });
        return;
    }
  }

  /** Ends the presentation: everything stops, the outcome resolves (first call wins). */
  finish(
    outcome:
      | { readonly kind: 'aborted'; readonly reason: AbortReason; readonly detail: string }
      | Omit<Extract<PresentationOutcome, { kind: 'shared' }>, keyof OutcomeBase>
      | Omit<Extract<PresentationOutcome, { kind: 'declined' }>, keyof OutcomeBase>,
  ): void {
    if (this.#done) return;
    this.#done = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const wake of [...this.#wakeups]) wake();
    this.#session?.close();
    const transport = this.#transport;
    if (transport !== undefined) this.#closing = transport.close().catch(() => undefined);
    this.#resolve({ ...outcome, engagement: this.engagement, bleMode: this.bleMode });
  }

  /** Resolves once the transport has closed (after `finish`). */
  closed(): Promise<void> {
    return this.#closing;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.#timers.delete(timer);
        this.#wakeups.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#timers.add(timer);
      this.#wakeups.add(wake);
    });
  }
}

export class VirtualPhone<Device extends PhoneRadio = RadioDevice> {
  readonly profile: PhoneProfile;
  /** Where its Bluetooth lives: a device of the in-memory radio, or a real stack's (src/qa/hci). */
  readonly device: Device;
  readonly credential: TestCredential;
  readonly endTimeoutMs: number;
  readonly context: MdocContext;
  #behaviour: PhoneBehaviour;
  #current: Presentation | undefined;
  #stopped = false;

  private constructor(device: Device, options: PhoneSetup, profile: PhoneProfile, credential: TestCredential) {
    this.device = device;
    this.profile = profile;
    this.credential = credential;
    this.#behaviour = options.behaviour ?? {};
    this.endTimeoutMs = options.endTimeoutMs ?? 5_000;
    this.context = options.context ?? createNodeMdocContext();
    dropNumbers(this.#behaviour.nfcFieldDropAtApdu);
  }

  /** A phone on `radio` holding `credential` (default: the cached test mDL of the behaviour's variant). */
  static async create(options: VirtualPhoneOptions): Promise<VirtualPhone> {
    const profile = resolvePhoneProfile(options.profile);
    const device = options.radio.addDevice({ name: options.name ?? `phone-${profile.name}`, mtu: profile.mtu });
    return new VirtualPhone(device, options, profile, await VirtualPhone.credentialFor(options));
  }

  /** A phone whose Bluetooth is `device` (e.g. a real stack over HCI), otherwise as `create`. */
  static async createOn<D extends PhoneRadio>(device: D, options: PhoneSetup): Promise<VirtualPhone<D>> {
    return new VirtualPhone(device, options, resolvePhoneProfile(options.profile), await VirtualPhone.credentialFor(options));
  }

  private static async credentialFor(options: PhoneSetup): Promise<TestCredential> {
    const variant = options.behaviour?.credential ?? 'valid';
    const portraitFormat = options.behaviour?.portrait ?? 'jpeg';
    return (
      options.credential ??
      (await getTestCredential({
        ...(variant === 'tampered' ? { tamper: true } : variant === 'expired' ? { validity: 'expired' as const } : {}),
        portraitFormat,
      }))
    );
  }

  get behaviour(): PhoneBehaviour {
    return this.#behaviour;
  }

  /** Replaces the behaviour for presentations started from now on (`credential` and `portrait` only count at create). */
  setBehaviour(behaviour: PhoneBehaviour): void {
    dropNumbers(behaviour.nfcFieldDropAtApdu);
    this.#behaviour = behaviour;
  }

  /** The current (latest) presentation. */
  get presentation(): PresentationInfo | undefined {
    return this.#current;
  }

  /** The outcome of the current presentation. */
  get outcome(): Promise<PresentationOutcome> {
    const current = this.#current;
    if (current === undefined) throw new Error('the virtual phone has not presented yet');
    return current.outcome;
  }

  /** QR engagement: starts BLE as the DeviceEngagement says and returns the QR text ("mdoc:" + base64url DE). */
  presentQr(options: PresentationOptions = {}): string {
    const keys = createEngagementKeys(options);
    const deviceEngagement = qrDeviceEngagement(this.profile, keys);
    const presentation = this.#begin('qr', keys, deviceEngagement);
    presentation.handover = { type: 'qr' };
    presentation.qr = deviceEngagementToQr(deviceEngagement);
    const { peripheralServer, centralClient } = this.profile.bleModes;
    presentation.startBle({
      ...(peripheralServer ? { peripheralServerUuid: keys.serviceUuid } : {}),
      ...(centralClient ? { centralClientUuid: keys.serviceUuid } : {}),
    });
    return presentation.qr;
  }

  /** NFC engagement: the tag to put on a reader; BLE starts once the reader has read the Handover Select. */
  tag(options: PresentationOptions = {}): VirtualNfcTag {
    const keys = createEngagementKeys(options);
    const profile = this.profile;
    const deviceEngagement = nfcDeviceEngagement(profile, keys.eDeviceKey);
    const negotiated = profile.handover === 'negotiated';
    const presentation = this.#begin(negotiated ? 'nfc_negotiated' : 'nfc_static', keys, deviceEngagement);
    let assignment: BleAssignment | undefined;
    let noCarrier: string | undefined;
    const onHandoverComplete = (handover: CompletedHandover): void => {
      if (presentation.done) return;
      presentation.handover = { type: 'nfc', handoverSelect: handover.handoverSelect, handoverRequest: handover.handoverRequest };
      if (assignment !== undefined) presentation.startBle(assignment);
      else
        presentation.finish({
          kind: 'aborted',
          reason: 'no_common_transport',
          detail: noCarrier ?? 'the Handover Select selects no BLE carrier',
        });
    };
    const fieldDropAtApdu = dropNumbers(this.#behaviour.nfcFieldDropAtApdu);
    if (!negotiated) {
      const built = staticHandoverSelect(profile, deviceEngagement, keys.serviceUuid);
      assignment = built.ble;
      return new HandoverTag({
        mode: 'static',
        capabilityContainer: profile.capabilityContainer,
        handoverSelect: built.handoverSelect,
        fieldDropAtApdu,
        onHandoverComplete,
      });
    }
    return new HandoverTag({
      mode: 'negotiated',
      capabilityContainer: profile.capabilityContainer,
      serviceParameter: profile.serviceParameter,
      handoverSelectNotReadyReads: profile.handoverSelectNotReadyReads,
      fieldDropAtApdu,
      onHandoverRequest: (handoverRequest) => {
        const answer = answerHandoverRequest(profile, deviceEngagement, keys.serviceUuid, handoverRequest);
        assignment = answer.ble;
        noCarrier = answer.reason;
        return answer.handoverSelect;
      },
      onHandoverComplete,
    });
  }

  /** Ends the current presentation (`stopped`) and releases the radio; the phone cannot present again. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const current = this.#current;
    if (current === undefined) return;
    current.finish({ kind: 'aborted', reason: 'stopped', detail: 'the virtual phone was stopped' });
    await current.closed();
  }

  #begin(engagement: EngagementKind, keys: EngagementKeys, deviceEngagement: Uint8Array): Presentation {
    if (this.#stopped) throw new Error('the virtual phone was stopped');
    const previous = this.#current;
    previous?.finish({ kind: 'aborted', reason: 'superseded', detail: 'a new presentation started' });
    const presentation = new Presentation(this, previous?.closed() ?? Promise.resolve(), engagement, keys, deviceEngagement);
    this.#current = presentation;
    return presentation;
  }
}
