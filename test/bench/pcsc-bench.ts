/**
 * `npm run bench:pcsc`: what the kiosk adds to an APDU exchange on the real PC/SC stack.
 *
 *   kiosk   backend → kiosk (WebSocket) → PC/SC adapter → pcscd → vpcd → virtual card → back, timed
 *           by the fake backend from sending `nfc_apdu` to receiving `nfc_rapdu`;
 *   direct  a bare transmit through the same binding (`smartcard`) to the same card on the same reader (a
 *           second, shared handle), in a process of its own (`pcsc-direct-child.ts`: the addon may be
 *           loaded by one thread per process, and here that is the kiosk adapter's worker);
 *   thread  the same bare transmit in this process through the binding on its worker thread
 *           (`worker-binding.ts`), as the kiosk's adapter runs it: thread − direct is what the hop costs.
 *
 * Both run in this process against one private pcscd (TCP_NODELAY shim, tools/pcscd) with the card in
 * this process too, in alternating batches so drift in the machine's load hits both alike. Last line:
 * `RESULT added_median_ms=… kiosk_median_ms=… direct_median_ms=…` (added = kiosk − direct medians; the
 * issue's target is < 0.5 ms; issue 34's goal < 0.15 ms), then the per-round interval `added_ci_low_ms`/`added_ci_high_ms`.
 * `--warmup=N` and `--rounds=N` scale it; `--ci-seed=N` sets the interval's seed. The run fails only on a correctness problem (a wrong or missing response).
 */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { workerBindingFactory } from '../../src/devices/pcsc/worker-binding.js';
import { bareBatch, openBareHandle, type BareHandle } from './pcsc-handle.js';
import { PcscNfcReader } from '../../src/devices/pcsc/pcsc-nfc-reader.js';
import { createKiosk } from '../../src/kiosk/compose.js';
import { parseConfig } from '../../src/platform/config.js';
import type { Kiosk } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import { VpcdCard } from '../../src/qa/sim/vpcd/vpcd-card.js';
import { startPrivatePcscd } from '../../tools/pcscd/pcscd-daemon.js';
import { FakeBackend } from '../support/fake-backend.js';
import { BackendPeer, describeSummary, finishBench, intArg, Mailbox, ms, roundTrips, summarize, type Inbound } from './bench-tools.js';
import { apduCommand, b64, instantCard, stepRequest } from './bench-protocol.js';
import { describeInterval, meanInterval } from './bench-stats.js';

const BATCH = 100;
/**
 * Per side, not measured, in rotating batches. As in bench:relay, the paths take a few thousand APDUs to
 * settle (the kiosk's — WebSocket, relay, adapter, worker messages — longest): with 100 the measured rounds
 * were still on the slope (added 0.30 ms against 0.17–0.19 ms after 3,000, quiet machine, 20 rounds each).
 */
const WARMUP = intArg('warmup', 3_000);
const ROUNDS = intArg('rounds', 20); // → 2,000 measured round trips per side
const APDUS = WARMUP + ROUNDS * BATCH;
/** Seed of the bootstrap interval over rounds (printed, so an interval can be reproduced). */
const CI_SEED = intArg('ci-seed', 34);

const APDU_TEXTS = Array.from({ length: APDUS }, (_, i) => stepRequest('nfc_apdu', { data: b64(apduCommand(i)) }));
const RAPDU_B64 = Array.from({ length: APDUS }, (_, i) => b64(instantCard(apduCommand(i))));

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** The kiosk's side: `count` APDUs from the backend, each sent when the previous response arrived. */
function kioskBatch(peer: BackendPeer, first: number, count: number, samples: number[] | undefined): Promise<void> {
  const check = (inbound: Inbound, i: number): void => {
    const message = inbound.message;
    if (inbound.op !== 'nfc_rapdu' || message.status !== 'ok' || message.data !== RAPDU_B64[first + i]) {
      throw new Error(`APDU ${first + i}: unexpected answer ${JSON.stringify(message).slice(0, 160)}`);
    }
  };
  return roundTrips(peer, count, (i) => APDU_TEXTS[first + i] ?? '', check, samples, 30_000);
}

/** The bare side in its own process (pcsc-direct-child.ts). */
class DirectChild {
  private readonly replies = new Mailbox<Record<string, unknown>>();

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (m) => this.replies.put(m as Record<string, unknown>));
    child.on('exit', (code) => this.replies.put({ error: `the direct side exited (code ${code})` }));
  }

  static async start(readerName: string): Promise<DirectChild> {
    const child = fork(new URL('./pcsc-direct-child.js', import.meta.url), [readerName], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const direct = new DirectChild(child);
    await direct.reply();
    return direct;
  }

  private async reply(): Promise<Record<string, unknown>> {
    const message = await this.replies.take(60_000, 'the direct side');
    if (typeof message.error === 'string') throw new Error(message.error);
    return message;
  }

  async batch(first: number, count: number, samples: number[] | undefined): Promise<void> {
    this.child.send({ first, count, measure: samples !== undefined });
    const { samples: got } = await this.reply();
    if (samples && Array.isArray(got)) samples.push(...got.filter((x): x is number => typeof x === 'number'));
  }

  stop(): void {
    if (this.child.connected) this.child.send({ stop: true });
    setTimeout(() => this.child.kill(), 2_000).unref();
  }
}

function benchKiosk(backend: FakeBackend, nfc: PcscNfcReader): Kiosk {
  const config = parseConfig({
    backend: { baseUrl: backend.baseUrl, apiKey: backend.apiKey },
    timeouts: { apduMs: 2_000, backendReplyMs: 30_000, verificationMs: 150_000 },
    log: { level: 'silent' },
  });
  return createKiosk(config, { nfc }, createLogger({ level: 'silent' }, { write: () => undefined }));
}

async function main(): Promise<void> {
  const started = performance.now();
  const failures: string[] = [];
  let result = 'RESULT added_median_ms=NaN kiosk_median_ms=NaN direct_median_ms=NaN';
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(`pcsc bench: node ${process.version}, ${os.cpus().length} CPU(s), load average ${load}`);
  const pcscd = await startPrivatePcscd({ readers: 2 });
  const slot = pcscd.readers[0];
  if (!slot) throw new Error('no vpcd reader');
  console.log(`private pcscd pid ${pcscd.pid}, reader "${slot.name}" on 127.0.0.1:${slot.port}`);
  const card = new VpcdCard({ host: slot.host, port: slot.port });
  const backend = await FakeBackend.start();
  const nfc = new PcscNfcReader({ reader: slot.name });
  let kiosk: Kiosk | undefined;
  let direct: DirectChild | undefined;
  let threaded: BareHandle | undefined;
  const threadFactory = workerBindingFactory();
  try {
    const peers = new Mailbox<BackendPeer>();
    backend.onConnection((connection) => peers.put(new BackendPeer(connection)));
    kiosk = benchKiosk(backend, nfc);
    kiosk.start();
    const peer = await peers.take(10_000, 'kiosk WebSocket connection');
    const engage = await peer.next(10_000);
    check(engage.op === 'engage', `first message was ${engage.op}, not engage`);
    await card.insert({ fieldOn: () => undefined, fieldOff: () => undefined, processApdu: instantCard });
    const present = await peer.next(10_000);
    check(present.op === 'nfc_card_present', `after the tap the kiosk sent ${present.op}`);
    direct = await DirectChild.start(slot.name);
    threaded = await openBareHandle(slot.name, threadFactory);

    const kioskSamples: number[] = [];
    const directSamples: number[] = [];
    const threadSamples: number[] = [];
    const bare = direct;
    const viaThread = threaded;
    const sides = [
      (first: number, count: number, samples: number[] | undefined) => kioskBatch(peer, first, count, samples),
      (first: number, count: number, samples: number[] | undefined) => bare.batch(first, count, samples),
      (first: number, count: number, samples: number[] | undefined) => bareBatch(viaThread, first, count, samples),
    ] as const;
    const sampleSets = [kioskSamples, directSamples, threadSamples] as const;
    // Warm-up in rotating batches, so all three warm alike.
    for (let done = 0; done < WARMUP; done += BATCH) {
      for (const side of sides) await side(done, Math.min(BATCH, WARMUP - done), undefined);
    }
    const roundAdded: number[] = [];
    const roundHop: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const first = WARMUP + round * BATCH;
      const inRound = sampleSets.map(() => [] as number[]);
      // Rotate which side goes first, so none always follows another's work.
      for (let k = 0; k < sides.length; k++) {
        const which = (round + k) % sides.length;
        await sides[which]?.(first, BATCH, inRound[which]);
      }
      inRound.forEach((samples, i) => sampleSets[i]?.push(...samples));
      const [rk, rd, rt] = inRound.map((samples) => summarize(samples).median);
      roundAdded.push((rk ?? Number.NaN) - (rd ?? Number.NaN));
      roundHop.push((rt ?? Number.NaN) - (rd ?? Number.NaN));
    }
    const k = summarize(kioskSamples);
    const d = summarize(directSamples);
    const t = summarize(threadSamples);
    console.log(`\nkiosk  (backend → kiosk → pcscd → card → back) ms: ${describeSummary(k)}`);
    console.log(`direct (smartcard transmit → pcscd → card) ms:    ${describeSummary(d)}`);
    console.log(`thread (the same through the binding's worker thread) ms: ${describeSummary(t)}`);
    const added = meanInterval(roundAdded, { seed: CI_SEED });
    const hop = meanInterval(roundHop, { seed: CI_SEED });
    console.log(
      `added median ${ms(k.median - d.median)} ms (issue 34's goal < 0.15 ms), p90 ${ms(k.p90 - d.p90)} ms; of it the worker thread's hop ${ms(t.median - d.median)} ms`,
    );
    console.log(
      `per round (${BATCH} APDUs a side), kiosk − direct medians, mean: ${describeInterval(added)} ms; thread hop ${describeInterval(hop)} ms (bootstrap over rounds, seed ${CI_SEED})`,
    );
    result = `RESULT added_median_ms=${ms(k.median - d.median)} kiosk_median_ms=${ms(k.median)} direct_median_ms=${ms(d.median)} thread_hop_ms=${ms(t.median - d.median)} added_ci_low_ms=${ms(added.low)} added_ci_high_ms=${ms(added.high)}`;
    peer.sendText(JSON.stringify({ type: 'error', message: 'bench: done' }));
  } catch (e) {
    failures.push(e instanceof Error ? e.message : String(e));
  } finally {
    direct?.stop();
    threaded?.close();
    await kiosk?.stop();
    await card.remove();
    await nfc.close();
    await threadFactory.dispose();
    await backend.stop();
    await pcscd.stop();
  }
  finishBench('pcsc bench', started, failures, `${ROUNDS * BATCH} APDUs per side answered correctly, in order`, result);
}

main().catch((e: unknown) => {
  console.error(`pcsc bench: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 1;
});
