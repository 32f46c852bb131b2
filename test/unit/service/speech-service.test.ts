/**
 * The service's speech (src/service/speech-service.ts): the audio cache (least recently used, bounded by
 * entries and bytes), private texts never cached, the screen's report kept for diagnostics, a host without
 * a built-in voice saying so; and, with the real voice process behind a whole KioskService, that no text it
 * was asked to say — private or not — reaches a log line, the diagnostics or any file of a support bundle.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extract } from 'tar';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatchIntent } from '../../../src/common/kiosk-api.js';
import type { SpeechAudio, SpeechReport } from '../../../src/common/speech.js';
import { forkVoiceLauncher } from '../../../src/devices/speech/voice-launcher.js';
import { AudioCache, SpeechService } from '../../../src/service/speech-service.js';
import { InProcessChild, serveFake } from '../../support/voice-fixtures.js';
import { startServiceFixture, type ServiceFixture } from './service-fixture.js';

const quiet = { info: () => undefined, warn: () => undefined };
const audio = (bytes: number): SpeechAudio => ({ sampleRate: 22_050, pcm: 'A'.repeat(bytes), engine: 'test' });

let fixture: ServiceFixture | undefined;
const services: SpeechService[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await fixture?.stop();
  fixture = undefined;
  await Promise.all(services.splice(0).map((s) => s.close()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** A SpeechService over the fake engine in this process, counting the utterances its child was asked for. */
function fakeService(): { service: SpeechService; spoken: () => number } {
  const children: InProcessChild[] = [];
  const service = new SpeechService({
    launcher: () => {
      const child = serveFake(new InProcessChild());
      children.push(child);
      return child;
    },
    log: () => quiet,
  });
  services.push(service);
  return { service, spoken: () => children.flatMap((c) => c.posted).filter((m) => (m as { t?: string }).t === 'speak').length };
}

describe('the audio cache', () => {
  it('drops the least recently used entry beyond its entries', () => {
    const cache = new AudioCache(2, 1_000);
    cache.set('a', audio(10));
    cache.set('b', audio(10));
    expect(cache.get('a')).toBeDefined(); // a is now the most recent
    cache.set('c', audio(10));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBeDefined();
    expect(cache.get('c')).toBeDefined();
    expect(cache.size).toBe(2);
  });

  it('drops the oldest entries beyond its bytes, and never keeps one larger than all of them', () => {
    const cache = new AudioCache(10, 100);
    cache.set('a', audio(40));
    cache.set('b', audio(40));
    cache.set('c', audio(40));
    expect(cache.get('a')).toBeUndefined();
    expect(cache.usedBytes).toBe(80);
    cache.set('huge', audio(101));
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.usedBytes).toBe(80);
    cache.set('b', audio(10)); // replacing counts the new size only
    expect(cache.usedBytes).toBe(50);
  });
});

describe('the speech service', () => {
  it('caches a fixed prompt, but never a private text', async () => {
    const { service, spoken } = fakeService();
    service.start();
    const prompt = { text: 'Hold your phone near the reader.', language: 'en' as const };
    const first = await service.synthesize(prompt);
    expect(Buffer.from(first.pcm, 'base64').byteLength).toBe(2 * prompt.text.length);
    expect(await service.synthesize(prompt)).toBe(first);
    expect(spoken()).toBe(1);
    // Another rate or language is another utterance.
    await service.synthesize({ ...prompt, rate: 1.5 });
    await service.synthesize({ ...prompt, language: 'fr' });
    expect(spoken()).toBe(3);
    const secret = { text: 'Given name: Alex', language: 'en' as const, private: true };
    await service.synthesize(secret);
    await service.synthesize(secret);
    expect(spoken()).toBe(5);
  });

  it('keeps the screen’s last report and the built-in voice’s state for diagnostics', async () => {
    const { service } = fakeService();
    service.start();
    await service.synthesize({ text: 'Ready.', language: 'es' });
    const report: SpeechReport = {
      active: true,
      engine: 'built_in',
      voiceName: 'eSpeak NG',
      output: 'headset',
      outputName: 'USB headset',
      outputWorks: true,
      systemVoices: { en: ['Samantha'] },
    };
    service.report(report);
    const diagnostics = service.diagnostics();
    expect(diagnostics.screen).toEqual(report);
    expect(diagnostics.builtIn).toMatchObject({ state: 'ready', engine: 'fake eSpeak NG', made: 1 });
  });

  it('a host without a built-in voice says so, and reports it stopped', async () => {
    const service = new SpeechService({ launcher: undefined, log: () => quiet });
    await expect(service.synthesize({ text: 'Ready.', language: 'en' })).rejects.toThrow(/no built-in voice/);
    expect(service.builtInStatus()).toMatchObject({ state: 'stopped', made: 0 });
  });
});

async function filesUnder(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) out.set(join(entry.parentPath, entry.name), await readFile(join(entry.parentPath, entry.name), 'utf8'));
  }
  return out;
}

describe('privacy of what is said (the real voice process behind a KioskService)', () => {
  it('no log line, diagnostics or support-bundle file holds a text it was asked to say', { timeout: 90_000 }, async () => {
    fixture = await startServiceFixture({ service: { voiceLauncher: forkVoiceLauncher() } });
    const f = fixture;
    const call = (intent: string, args: unknown): Promise<unknown> => dispatchIntent(f.service, intent, args, () => false);
    // Unique words that appear nowhere else, spoken privately and not.
    const spoken = 'Zorblaxian quintessence seventeen';
    const whispered = 'Given name Quillonvarde Trebizond';
    const made = (await call('synthesizeSpeech', { text: spoken, language: 'en' })) as SpeechAudio;
    expect(Buffer.from(made.pcm, 'base64').byteLength).toBeGreaterThan(20_000);
    expect(made.engine).toMatch(/^eSpeak NG/);
    await call('synthesizeSpeech', { text: whispered, language: 'fr', private: true });
    await call('reportSpeech', {
      active: true,
      engine: 'built_in',
      voiceName: 'eSpeak NG',
      output: 'speaker',
      outputName: 'Speakers',
      outputWorks: true,
      systemVoices: {},
    });
    const diagnostics = f.service.getDiagnostics();
    expect(diagnostics.speech?.builtIn).toMatchObject({ state: 'ready', made: 2 });
    expect(diagnostics.speech?.screen?.output).toBe('speaker');

    const work = await mkdtemp(join(tmpdir(), 'mdl-kiosk-speech-privacy-'));
    dirs.push(work);
    const bundle = await f.service.writeSupportBundleTo(join(work, 'bundle.tar.gz'));
    const unpacked = join(work, 'unpacked');
    await import('node:fs/promises').then(({ mkdir }) => mkdir(unpacked));
    await extract({ file: bundle.path, cwd: unpacked });
    const files = await filesUnder(unpacked);
    expect(files.size).toBeGreaterThan(3);
    const environment = [...files].find(([path]) => path.endsWith('environment.json'))?.[1] ?? '';
    expect(JSON.parse(environment)).toMatchObject({ speech: { builtIn: { state: 'ready', made: 2 } } });
    const summary = [...files].find(([path]) => path.endsWith('summary.txt'))?.[1] ?? '';
    expect(summary).toMatch(/^Speech: built-in voice ready \(eSpeak NG/m);

    const places = new Map<string, string>([
      ['log', f.logs.text()],
      ['diagnostics', JSON.stringify(diagnostics)],
      ...files,
      ...(await filesUnder(f.dataDir)),
    ]);
    for (const word of ['Zorblaxian', 'Quillonvarde', 'Trebizond']) {
      for (const [place, text] of places) expect(text.includes(word), `${word} in ${place}`).toBe(false);
    }
    expect(f.logs.events()).toContain('voice_process_ready');
  });
});
