/**
 * What one soak run does: the flow (engagement, phone profile, request profile, device authentication,
 * portrait format) and at most one fault, drawn from the run's own seeded stream (prng.ts), so that a
 * run is a pure function of (seed, run number). docs/soak.md lists every fault and its expected outcome.
 */
import { Prng } from './prng.js';

export const REQUEST_PROFILES = ['age_over_18', 'age_over_21', 'identity', 'full'] as const;
export type RequestProfileName = (typeof REQUEST_PROFILES)[number];

export type Engagement = 'qr' | 'nfc';
/** Every phone profile of the virtual wallet (src/qa/sim/virtual-wallet/profiles.ts) is in the mix. */
export const PHONE_PROFILES = ['android', 'iphone', 'apple-wallet', 'google-wallet', 'samsung-wallet', 'multipaz'] as const;
export type PhoneProfile = (typeof PHONE_PROFILES)[number];
/**
 * Profiles that run mdoc central client mode only, whatever the engagement (QR, static or negotiated
 * handover), so the phone always reads the kiosk's Ident: the only ones a wrong-Ident fault bites.
 * Profiles with both modes (android, google-wallet, multipaz) may connect as peripheral and never read it.
 */
export const CENTRAL_CLIENT_ONLY_PROFILES: readonly PhoneProfile[] = ['iphone', 'apple-wallet', 'samsung-wallet'];
export type DropHow = 'close' | 'terminate';
/** Backend phases of a verification in which the socket can drop (the mock backend's names). */
export type RunPhase = 'nfc_handover' | 'awaiting_card' | 'ble_exchange' | 'ble_transfer' | 'complete';

export interface Flow {
  readonly engagement: Engagement;
  readonly phone: PhoneProfile;
  readonly profile: RequestProfileName;
  readonly deviceAuth: 'signature' | 'mac';
  readonly portrait: 'jpeg' | 'jpeg2000';
}

export type Fault =
  | { readonly kind: 'none' }
  /** NFC: the field drops at APDU `atApdu` of the handover (no answer); the customer taps again. */
  | { readonly kind: 'field_drop'; readonly atApdu: number }
  /** NFC: the phone is lifted right after answering APDU `afterApdu` and not laid down again. */
  | { readonly kind: 'card_lifted'; readonly afterApdu: number }
  /** The phone ends the BLE link after sending `afterChunks` chunks of its answer. */
  | { readonly kind: 'ble_drop'; readonly afterChunks: number }
  /** The radio link drops (HCI connection timeout) `afterMs` into the BLE transfer. */
  | { readonly kind: 'radio_drop'; readonly afterMs: number }
  /** The backend drops the session socket on entering `phase`. */
  | { readonly kind: 'socket_drop'; readonly phase: RunPhase; readonly how: DropHow }
  /** The socket drops when `complete` is due, and `GET /sessions/{id}` answers `status`: the result cannot be recovered. */
  | { readonly kind: 'result_lost'; readonly how: DropHow; readonly status: number }
  /** The idle, engaged socket drops before the customer arrives; the kiosk re-arms. */
  | { readonly kind: 'idle_socket_drop'; readonly how: DropHow }
  /** Every new socket is closed right after it opens, for `forMs`; then the backend behaves. */
  | { readonly kind: 'handshake_drop'; readonly forMs: number }
  /** The idle socket drops and its reconnect is answered 404: the kiosk creates a new session. */
  | { readonly kind: 'backend_404' }
  /** The idle socket drops and the next `times` handshakes are answered 409 (above 5 the kiosk gives up on the session). */
  | { readonly kind: 'backend_409'; readonly times: number }
  /** The idle session is replaced and `POST /sessions` or the handshake answers `status` `times` times. */
  | {
      readonly kind: 'backend_5xx';
      readonly exchange: 'create' | 'upgrade';
      readonly status: number;
      readonly times: number;
      readonly retryAfterS: number | undefined;
    }
  /** Every backend message of the run is held back `delayMs` (below the kiosk's reply timeout). */
  | { readonly kind: 'backend_slow'; readonly delayMs: number }
  /** `POST /sessions` answers after `delayMs` while the kiosk re-arms (below its HTTP timeout). */
  | { readonly kind: 'backend_slow_http'; readonly delayMs: number }
  /** The backend's answer to the trigger (`ble_exchange` or the first `nfc_apdu`) comes after the kiosk's reply timeout. */
  | { readonly kind: 'backend_stall'; readonly delayMs: number }
  /** The backend is unreachable for `forMs` while the kiosk is idle. */
  | { readonly kind: 'backend_offline'; readonly forMs: number }
  /** The backend goes away `afterMs` into the verification and comes back `forMs` later. */
  | { readonly kind: 'backend_offline_run'; readonly afterMs: number; readonly forMs: number }
  /** The customer taps or scans while the backend has been away for longer than the kiosk waits for a session. */
  | { readonly kind: 'backend_offline_tap'; readonly forMs: number }
  /** pcscd is restarted (`restart`: SIGTERM then start; `kill`: SIGKILL then start) while the kiosk is idle. */
  | { readonly kind: 'pcscd_restart'; readonly how: 'restart' | 'kill' }
  /** NFC: pcscd is killed right after APDU `afterApdu` and restarted; the customer taps again if asked. */
  | { readonly kind: 'pcscd_restart_run'; readonly afterApdu: number }
  /** The reader leaves the machine for `forMs` while the kiosk is idle, then comes back. */
  | { readonly kind: 'reader_unplug'; readonly forMs: number }
  | { readonly kind: 'phone_decline' }
  /** The holder takes `delayMs` to approve (below the kiosk's BLE idle timeout). */
  | { readonly kind: 'phone_slow'; readonly delayMs: number }
  /** The holder takes `delayMs` to approve (above the kiosk's BLE idle timeout). */
  | { readonly kind: 'phone_too_slow'; readonly delayMs: number }
  /** A central-client-only phone (CENTRAL_CLIENT_ONLY_PROFILES) expects another Ident and leaves. */
  | { readonly kind: 'wrong_ident' }
  | { readonly kind: 'credential'; readonly variant: 'expired' | 'tampered' }
  /** The idle session expires on the backend (which then closes its socket): reconnect → 404 → a new session. */
  | { readonly kind: 'session_expiry'; readonly lifetimeMs: number }
  /** The customer comes after the kiosk renewed its idle pre-warmed session. */
  | { readonly kind: 'session_renewal' };

export type FaultKind = Fault['kind'];

export interface RunPlan {
  readonly index: number;
  readonly flow: Flow;
  readonly fault: Fault;
}

/** Bounds the plan must respect, from the kiosk's configuration (stack.ts). */
export interface PlanLimits {
  readonly backendReplyMs: number;
  readonly bleIdleMs: number;
  readonly httpMs: number;
  readonly armWaitMs: number;
  /** Idle time after which the kiosk renews its pre-warmed session. */
  readonly renewAfterIdleMs: number;
}

/**
 * Relative frequencies. Cheap faults come often; those that cost seconds of wall time each (timeouts,
 * restarts, an absent backend) less often, so a short run still meets each of them a few times.
 */
export const FAULT_WEIGHTS: Readonly<Record<FaultKind, number>> = {
  none: 30,
  field_drop: 5,
  card_lifted: 2,
  ble_drop: 4,
  radio_drop: 3,
  socket_drop: 6,
  result_lost: 2,
  idle_socket_drop: 3,
  handshake_drop: 1.5,
  backend_404: 3,
  backend_409: 3,
  backend_5xx: 3,
  backend_slow: 3,
  backend_slow_http: 2,
  backend_stall: 1.5,
  backend_offline: 1.5,
  backend_offline_run: 1.5,
  backend_offline_tap: 0.7,
  pcscd_restart: 1.5,
  pcscd_restart_run: 1,
  reader_unplug: 1,
  phone_decline: 4,
  phone_slow: 2,
  phone_too_slow: 1,
  wrong_ident: 1.5,
  credential: 5,
  session_expiry: 1,
  session_renewal: 1,
};

/** Faults that only exist on the NFC path. */
const NFC_ONLY: ReadonlySet<FaultKind> = new Set(['field_drop', 'card_lifted', 'pcscd_restart_run']);

function drawFault(rng: Prng, kind: FaultKind, limits: PlanLimits): Fault {
  const how = (): DropHow => (rng.chance(0.5) ? 'close' : 'terminate');
  switch (kind) {
    case 'none':
    case 'backend_404':
    case 'phone_decline':
    case 'wrong_ident':
    case 'session_renewal':
      return { kind };
    case 'field_drop':
      // A static handover takes 6–8 APDUs, a negotiated one 10–14: a drop past the last never happens.
      return { kind, atApdu: rng.int(1, 12) };
    case 'card_lifted':
      return { kind, afterApdu: rng.int(1, 12) };
    case 'ble_drop':
      return { kind, afterChunks: rng.int(0, 12) };
    case 'radio_drop':
      return { kind, afterMs: rng.int(0, 150) };
    case 'socket_drop':
      return { kind, phase: rng.pick(['nfc_handover', 'awaiting_card', 'ble_exchange', 'ble_transfer', 'complete'] as const), how: how() };
    case 'result_lost':
      return { kind, how: how(), status: rng.pick([500, 502, 503]) };
    case 'idle_socket_drop':
      return { kind, how: how() };
    case 'handshake_drop':
      return { kind, forMs: rng.int(300, 1_500) };
    case 'backend_409':
      return { kind, times: rng.int(1, 7) };
    case 'backend_5xx':
      return {
        kind,
        exchange: rng.pick(['create', 'upgrade'] as const),
        status: rng.pick([500, 502, 503]),
        times: rng.int(1, 3),
        retryAfterS: rng.pick([undefined, 0, 1]),
      };
    case 'backend_slow':
      return { kind, delayMs: rng.int(20, Math.floor(limits.backendReplyMs / 10)) };
    case 'backend_slow_http':
      return { kind, delayMs: rng.int(100, Math.floor(limits.httpMs / 2)) };
    case 'backend_stall':
      return { kind, delayMs: limits.backendReplyMs + rng.int(500, 1_500) };
    case 'backend_offline':
      return { kind, forMs: rng.int(300, 3_000) };
    case 'backend_offline_run':
      return { kind, afterMs: rng.int(0, 400), forMs: rng.int(300, 2_000) };
    case 'backend_offline_tap':
      return { kind, forMs: limits.armWaitMs + rng.int(1_000, 2_000) };
    case 'pcscd_restart':
      return { kind, how: rng.chance(0.5) ? 'restart' : 'kill' };
    case 'pcscd_restart_run':
      return { kind, afterApdu: rng.int(1, 5) };
    case 'reader_unplug':
      return { kind, forMs: rng.int(200, 1_500) };
    case 'phone_slow':
      return { kind, delayMs: rng.int(100, Math.floor(limits.bleIdleMs / 2)) };
    case 'phone_too_slow':
      return { kind, delayMs: limits.bleIdleMs + rng.int(1_000, 2_000) };
    case 'credential':
      return { kind, variant: rng.chance(0.5) ? 'expired' : 'tampered' };
    case 'session_expiry':
      return { kind, lifetimeMs: rng.int(800, 1_500) };
  }
}

/** The plan of run `index` (1-based) of `seed`. */
export function planRun(
  seed: number,
  index: number,
  limits: PlanLimits,
  weights: Readonly<Record<FaultKind, number>> = FAULT_WEIGHTS,
): RunPlan {
  const rng = Prng.forRun(seed, index);
  const kind = rng.weighted(weights);
  const fault = drawFault(rng, kind, limits);
  const nfcOnly =
    NFC_ONLY.has(kind) || (fault.kind === 'socket_drop' && (fault.phase === 'nfc_handover' || fault.phase === 'awaiting_card'));
  const engagement: Engagement = nfcOnly ? 'nfc' : rng.chance(0.5) ? 'nfc' : 'qr';
  // Only a central-client-only phone is sure to be the BLE central that reads the kiosk's Ident.
  const phone: PhoneProfile = rng.pick(kind === 'wrong_ident' ? CENTRAL_CLIENT_ONLY_PROFILES : PHONE_PROFILES);
  const flow: Flow = {
    engagement,
    phone,
    profile: rng.pick(REQUEST_PROFILES),
    deviceAuth: rng.chance(0.2) ? 'mac' : 'signature',
    portrait: rng.chance(0.1) ? 'jpeg2000' : 'jpeg',
  };
  return { index, flow, fault };
}

/** One line for the trail and failure reports. */
export function describePlan(plan: RunPlan): string {
  const { flow, fault } = plan;
  const params = Object.entries(fault)
    .filter(([key, value]) => key !== 'kind' && value !== undefined)
    .map(([key, value]) => `${key}=${String(value)}`)
    .join(',');
  const variant = [flow.deviceAuth === 'mac' ? 'mac' : '', flow.portrait === 'jpeg2000' ? 'jp2' : ''].filter((v) => v !== '').join('+');
  return `${flow.engagement}/${flow.phone}/${flow.profile}${variant === '' ? '' : `/${variant}`} fault=${fault.kind}${params === '' ? '' : `(${params})`}`;
}
