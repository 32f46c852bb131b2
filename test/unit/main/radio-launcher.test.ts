/**
 * The app's radio process launcher (src/main/radio-launcher.ts) on the fake `electron`: Electron's
 * utilityProcess.fork with piped output, structured-cloned messages both ways, a crash (an exit code, as
 * Electron reports it) restarting it through the supervisor.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { LibraryLog } from '../../../src/devices/ble/library-console.js';
import { RadioProcess } from '../../../src/devices/ble/radio-process/radio-process.js';
import { VoiceProcess } from '../../../src/devices/speech/voice-process.js';
import { appDependencies } from '../../../src/main/app-dependencies.js';
import { utilityRadioLauncher } from '../../../src/main/radio-launcher.js';
import { FakeUtilityProcess, resetFakeElectron } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js'));

const lines: { fields: object; message: string }[] = [];
const log: LibraryLog = {
  info: (fields, message) => lines.push({ fields, message }),
  warn: (fields, message) => lines.push({ fields, message }),
};

beforeEach(() => {
  resetFakeElectron();
  lines.length = 0;
});
afterEach(() => vi.useRealTimers());

function forked(i: number): FakeUtilityProcess {
  const child = FakeUtilityProcess.forked[i];
  if (!child) throw new Error(`no utility process ${i}`);
  return child;
}

describe('the radio process under Electron (utilityProcess)', () => {
  it('forks the bundled child with piped output, serves it, restarts it after a crash, kills it on close', async () => {
    vi.useFakeTimers();
    const radio = new RadioProcess({
      launcher: utilityRadioLauncher('/opt/kiosk/dist/app/radio.js'),
      init: { central: true, peripheral: false },
      log,
      restartMinMs: 1_000,
      random: () => 0.5,
    });
    const first = forked(0);
    expect(first.modulePath).toBe('/opt/kiosk/dist/app/radio.js');
    expect(first.options).toMatchObject({ stdio: 'pipe' });
    expect(first.posted).toEqual([{ t: 'init', init: { central: true, peripheral: false } }]);
    expect(radio.pid).toBe(first.pid);

    first.emit('message', { t: 'ready', central: { usable: true }, problems: [] });
    expect(radio.central?.availability()).toEqual({ usable: true });
    first.stdout.write('printf from a binding\n');
    await vi.advanceTimersByTimeAsync(0);
    expect(lines.map((l) => l.message)).toContain('printf from a binding');

    first.emit('exit', 134);
    expect(radio.central?.availability()).toMatchObject({
      usable: false,
      reason: 'starting',
      detail: 'the radio process stopped (exited with code 134); restarting in 0.8 s',
    });
    await vi.advanceTimersByTimeAsync(750);
    expect(FakeUtilityProcess.forked).toHaveLength(2);

    const closing = radio.close();
    expect(forked(1).posted.at(-1)).toEqual({ t: 'shutdown' });
    await vi.advanceTimersByTimeAsync(3_000); // no exit after shutdown: killed
    await closing;
    expect(forked(1).killed).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('the voice process under Electron (utilityProcess)', () => {
  it('the app forks the bundled voice.js beside main.js as a utility process of its own name, and kills it on close', async () => {
    vi.useFakeTimers();
    const { voiceLauncher } = appDependencies({});
    if (voiceLauncher === undefined) throw new Error('the app has no voice launcher');
    const voice = new VoiceProcess({ launcher: voiceLauncher, log, random: () => 0.5 });
    voice.start();
    const child = forked(0);
    expect(child.modulePath).toMatch(/[/\\]voice\.js$/);
    expect(child.options).toMatchObject({ stdio: 'pipe', serviceName: 'mDL Kiosk voice' });
    child.emit('message', { t: 'ready', engine: 'eSpeak NG (WebAssembly, test)', sampleRate: 22_050, initMs: 5 });
    expect(voice.status()).toMatchObject({ state: 'ready', engine: 'eSpeak NG (WebAssembly, test)' });
    const said = voice.speak('Ready.', 'en-us', 175);
    expect(child.posted.at(-1)).toMatchObject({ t: 'speak', voice: 'en-us', wpm: 175 });
    const id = (child.posted.at(-1) as { id: number }).id;
    child.emit('message', { t: 'audio', id, pcm: new Uint8Array(4), ms: 1 });
    expect((await said).pcm.byteLength).toBe(4);

    const closing = voice.close();
    expect(child.posted.at(-1)).toEqual({ t: 'shutdown' });
    await vi.advanceTimersByTimeAsync(1_000); // no exit after shutdown: killed
    await closing;
    expect(child.killed).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });
});
