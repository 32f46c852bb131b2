/**
 * The soak's HCI lane: a second counter whose kiosk's noble central and bleno peripheral adapters run on
 * BlueZ's emulated controllers (tools/btvirt), the virtual phone's wallet on the opposite library on two
 * more, with its own embedded mock backend. Every `HCI_EVERY`-th run of the mix is followed by one
 * verification here, its flow picked from the seed: QR or NFC (the virtual reader), a phone that makes the
 * kiosk central (android) or peripheral (iphone), sometimes a phone that drops the link mid-answer. The
 * outcome must match (verified, or `ble_link_lost` for a drop), and the kiosk must be ready again. Its log
 * lines go through the same secrets search as the main kiosk's.
 */
import { performance } from 'node:perf_hooks';
import { createKiosk } from '../../src/kiosk/compose.js';
import { parseConfig } from '../../src/platform/config.js';
import type { Kiosk } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import {
  createHciStacks,
  createVirtualCounter,
  getTestPki,
  HCI_CONTROLLER_NAMES,
  hciTtysIn,
  type VirtualCounter,
} from '../../src/qa/index.js';
import { startEmulatedRadio, type EmulatedRadio } from '../btvirt/emulated-radio.js';
import { Prng } from './prng.js';
import { SOAK_SESSION, SOAK_TIMEOUTS } from './stack.js';
import { KioskWatch } from './watch.js';

/** One HCI verification after every this many runs of the mix (CI's 200 runs: 20 over HCI). */
export const HCI_EVERY = 10;

export interface HciPlan {
  readonly phone: 'android' | 'iphone';
  readonly engagement: 'qr' | 'nfc';
  readonly drop: boolean;
}

export function planHciRun(seed: number, index: number): HciPlan {
  const rng = Prng.forRun((seed ^ 0x48_43_49_00) >>> 0, index);
  return { phone: rng.pick(['android', 'iphone'] as const), engagement: rng.pick(['qr', 'nfc'] as const), drop: rng.chance(0.2) };
}

export const describeHciPlan = (p: HciPlan): string => `hci ${p.engagement}/${p.phone}${p.drop ? ' ble_drop' : ''}`;

export interface HciRunResult {
  readonly ok: boolean;
  readonly problem?: string;
}

export class HciLane {
  private constructor(
    private readonly radio: EmulatedRadio,
    private readonly counter: VirtualCounter,
    private readonly kiosk: Kiosk,
    private readonly watch: KioskWatch,
  ) {}

  static async start(onLogLine: (line: string) => void): Promise<HciLane> {
    const radio = await startEmulatedRadio({
      controllers: Object.values(HCI_CONTROLLER_NAMES),
      dir: `/tmp/mdl-kiosk-btvirt-soak-${process.pid}`,
    });
    try {
      const counter = await createVirtualCounter({
        pki: await getTestPki(),
        phone: 'android',
        kioskBle: 'both',
        backend: { lifetimeMs: SOAK_SESSION.lifetimeMs },
        phoneEndTimeoutMs: 2_000,
        name: 'soak-hci',
        hci: createHciStacks(hciTtysIn(radio.dir)),
      });
      const embedded = counter.backend;
      if (!embedded) throw new Error('the HCI counter started no backend');
      const config = parseConfig({
        backend: { baseUrl: embedded.url, apiKey: embedded.apiKey },
        session: SOAK_SESSION,
        timeouts: SOAK_TIMEOUTS,
        ble: { roles: 'both' },
        profile: 'age_over_21',
        log: { level: 'debug' },
      });
      const log = createLogger({ level: 'debug', name: 'mdl-kiosk-hci' }, { write: (line: string) => onLogLine(line) });
      const kiosk = createKiosk(config, counter.rig.devices, log);
      const watch = new KioskWatch(kiosk, () => undefined);
      kiosk.start();
      await watch.ready(30_000);
      return new HciLane(radio, counter, kiosk, watch);
    } catch (e) {
      await radio.stop();
      throw e;
    }
  }

  /** Tells `listener` each client secret the HCI backend hands out (the secrets search looks for them too). */
  onClientSecret(listener: (secret: string) => void): () => void {
    const embedded = this.counter.backend;
    return embedded ? embedded.backend.sessions.onCreated((session) => listener(session.clientSecret)) : () => undefined;
  }

  /**
   * Before a resource sample: the HCI kiosk ready again (a sample right after its run would catch it
   * replacing its session: the old socket closing, the new one opening), and its backend's idle keep-alive
   * connections closed. False when it is not ready within the bound (the sample is taken anyway).
   */
  async settle(boundMs: number): Promise<boolean> {
    const ready = await this.watch.ready(boundMs).then(
      () => true,
      () => false,
    );
    this.counter.backend?.backend.closeIdleConnections();
    return ready;
  }

  /** An API key the secrets search must never find in what this kiosk writes. */
  get apiKey(): string | undefined {
    return this.counter.backend?.apiKey;
  }

  async runOne(plan: HciPlan): Promise<HciRunResult> {
    const ready = await this.watch.ready(15_000).then(
      () => true,
      () => false,
    );
    if (!ready) return { ok: false, problem: 'the HCI kiosk was not ready' };
    await this.counter.reconfigurePhone({ profile: plan.phone, ...(plan.drop ? { bleDropAfterChunks: 2 } : { bleDropAfterChunks: null }) });
    const report = this.watch.nextReport(30_000);
    report.catch(() => undefined);
    const started = performance.now();
    if (plan.engagement === 'qr') this.counter.rig.showQr();
    else this.counter.rig.tap();
    let result;
    try {
      result = (await report).report;
    } catch (e) {
      return { ok: false, problem: `no HCI report: ${e instanceof Error ? e.message : String(e)}` };
    } finally {
      this.counter.rig.lift();
    }
    const expected = plan.drop ? 'ble_link_lost' : 'complete';
    const verified = result.result === 'complete' && result.outcome?.verdict === 'verified';
    if (plan.drop ? result.result !== expected : !verified) {
      return {
        ok: false,
        problem: `HCI ${describeHciPlan(plan)}: ${result.result}${result.outcome ? ` ${result.outcome.verdict}` : ''}${result.error ? ` (${result.error.code})` : ''}, expected ${plan.drop ? expected : 'verified'} (${(performance.now() - started).toFixed(0)} ms)`,
      };
    }
    return { ok: true };
  }

  async stop(): Promise<void> {
    this.watch.dispose();
    await this.kiosk.stop();
    await this.counter.stop();
    await this.radio.stop();
  }
}
