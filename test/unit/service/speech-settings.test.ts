/**
 * Saving the speech settings (issue 32): a partial `speech` update merges into the saved settings, each
 * field is checked against the contract and refused by its own key, every `speech.*` key (each action's
 * keys too) can be locked by the managed file or the command line, and a speech change reaches the screen
 * state without rebuilding the kiosk or its devices.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatchIntent, Settings, type FieldError } from '../../../src/common/kiosk-api.js';
import { DEFAULT_SPEECH_KEYS, DEFAULT_SPEECH_SETTINGS } from '../../../src/common/speech.js';
import type { ManagedConfig } from '../../../src/service/managed-config.js';
import { applyUpdate, lockedErrors, lockSources, settingsLayer, speechErrors, updatedKeys } from '../../../src/service/settings-store.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import { startServiceFixture, TEST_SCRYPT, type ServiceFixture, type ServiceFixtureOptions } from './service-fixture.js';

const PIN = '246810';
const MANAGED_PATH = '/etc/mdl-kiosk/config.json';
let fixture: ServiceFixture | undefined;

afterEach(async () => {
  await fixture?.stop();
  fixture = undefined;
});

function call(f: ServiceFixture, intent: string, args: unknown): Promise<unknown> {
  return dispatchIntent(f.service, intent, args, () => f.service.staffUnlocked());
}

async function unlocked(options: ServiceFixtureOptions = {}, managed?: Record<string, unknown>): Promise<ServiceFixture> {
  const pinHash = await hashPin(PIN, TEST_SCRYPT);
  const m: ManagedConfig | undefined = managed ? { path: MANAGED_PATH, layer: managed } : undefined;
  const f = await startServiceFixture({
    ...options,
    overrides: { staff: { pinHash }, ...options.overrides },
    service: { ...(m ? { managed: m } : {}), ...options.service },
  });
  await f.waitState((s) => s.view.phase === 'ready');
  expect(await call(f, 'unlock', { pin: PIN })).toMatchObject({ ok: true });
  return f;
}

type Saved = { ok: true; settings: Settings } | { ok: false; errors: FieldError[] };

describe('the speech settings map', () => {
  it('merges a partial update into what was saved; each action of the keys on its own', () => {
    const first = applyUpdate({}, { speech: { mode: 'always', volume: 0.5 } });
    expect(first).toEqual({ speech: { mode: 'always', volume: 0.5 } });
    const second = applyUpdate(first, { speech: { voice: 'built_in', keys: { ...DEFAULT_SPEECH_KEYS, start: ['NumpadEnter'] } } });
    expect(second.speech).toEqual({
      mode: 'always',
      volume: 0.5,
      voice: 'built_in',
      keys: { ...DEFAULT_SPEECH_KEYS, start: ['NumpadEnter'] },
    });
    // A locked action is not stored (a higher source sets it); the others are.
    const third = applyUpdate({}, { speech: { keys: DEFAULT_SPEECH_KEYS } }, ['speech.keys.start']);
    expect(Object.keys(third.speech?.keys ?? {})).not.toContain('start');
    expect(third.speech?.keys?.pause).toEqual(DEFAULT_SPEECH_KEYS.pause);
    expect(settingsLayer(second, undefined).speech).toMatchObject({ mode: 'always', keys: { start: ['NumpadEnter'] } });
  });

  it('names each speech key an update changes; keys sent unchanged are not counted', () => {
    expect(updatedKeys({ speech: { mode: 'off', headsetOnly: true } })).toEqual(['speech.mode', 'speech.headsetOnly']);
    const keys = { ...DEFAULT_SPEECH_KEYS, stop: ['Escape'] };
    expect(updatedKeys({ speech: { keys } }, DEFAULT_SPEECH_KEYS)).toEqual(['speech.keys.stop']);
    expect(updatedKeys({ speech: { keys } })).toHaveLength(6);
  });

  it('locks speech keys set by the managed file, the command line or the environment', () => {
    const found = lockSources({
      env: {},
      overrides: { speech: { volume: 0.5 } },
      managed: { speech: { mode: 'always', keys: { start: ['Numpad5'] } } },
    });
    expect(Object.fromEntries(found)).toEqual({
      'speech.volume': 'command_line',
      'speech.mode': 'managed',
      'speech.keys.start': 'managed',
    });
    const locked = [...found.keys()];
    const errors = lockedErrors(
      { speech: { mode: 'off', keys: { ...DEFAULT_SPEECH_KEYS, start: ['KeyS'] } } },
      locked,
      found,
      MANAGED_PATH,
      false,
      DEFAULT_SPEECH_KEYS,
    );
    expect(errors.map((e) => e.key)).toEqual(['speech.mode', 'speech.keys.start']);
    expect(errors[0]?.message).toContain(MANAGED_PATH);
    // The same keys sent unchanged pass.
    expect(lockedErrors({ speech: { keys: DEFAULT_SPEECH_KEYS } }, locked, found, MANAGED_PATH, false, DEFAULT_SPEECH_KEYS)).toEqual([]);
  });

  it('refuses each bad field by its own key', () => {
    const bad = (speech: unknown): string[] => speechErrors({ speech } as never).map((e) => e.key);
    expect(bad({ volume: 0.05 })).toEqual(['speech.volume']);
    expect(bad({ volume: 1.5 })).toEqual(['speech.volume']);
    expect(bad({ mode: 'loud' })).toEqual(['speech.mode']);
    expect(bad({ headsetOutput: 'x'.repeat(201) })).toEqual(['speech.headsetOutput']);
    expect(bad({ privateElements: ['Given Name'] })).toEqual(['speech.privateElements']);
    expect(bad({ keys: { ...DEFAULT_SPEECH_KEYS, volumeUp: ['Numpad+'] } })).toEqual(['speech.keys.volumeUp']);
    expect(bad({ volume: 1, headsetOutput: 'x'.repeat(200), keys: DEFAULT_SPEECH_KEYS })).toEqual([]);
  });
});

describe('saving speech settings on the service', () => {
  it('saves a partial update, shows it in the settings and the screen state, persists only it, and rebuilds nothing', async () => {
    fixture = await unlocked();
    const f = fixture;
    const buildsBefore = f.deviceBuilds.length;
    const saved = (await call(f, 'saveSettings', { speech: { mode: 'always', volume: 0.5 } })) as Saved;
    expect(saved.ok).toBe(true);
    if (!saved.ok) return;
    expect(saved.settings.speech).toEqual({ ...DEFAULT_SPEECH_SETTINGS, mode: 'always', volume: 0.5 });
    await f.waitState((s) => s.speech.mode === 'always' && s.speech.volume === 0.5, 5_000, 'the speech settings on the screen');
    await f.service.settled();
    // A speech change is the screen's business: the kiosk and its devices stay as they are.
    expect(f.deviceBuilds).toHaveLength(buildsBefore);
    expect(f.closedSets()).toBe(0);
    expect(f.logs.events()).not.toContain('kiosk_rebuild');
    const file = JSON.parse(await readFile(join(f.dataDir, 'settings.json'), 'utf8')) as { settings: unknown };
    expect(file.settings).toEqual({ speech: { mode: 'always', volume: 0.5 } });
    // A later save of another speech key keeps the first.
    const again = (await call(f, 'saveSettings', { speech: { headsetOnly: true } })) as Saved;
    expect(again.ok && again.settings.speech).toMatchObject({ mode: 'always', volume: 0.5, headsetOnly: true });
    expect(f.service.state().view.phase).toBe('ready');
  });

  it('refuses a bad value at the boundary, naming the key, and stores nothing', async () => {
    fixture = await unlocked();
    const f = fixture;
    await expect(call(f, 'saveSettings', { speech: { volume: 2 } })).rejects.toMatchObject({ code: 'invalid_args' });
    await expect(call(f, 'saveSettings', { speech: { keys: { ...DEFAULT_SPEECH_KEYS, start: ['Num pad 5'] } } })).rejects.toMatchObject({
      code: 'invalid_args',
      message: expect.stringContaining('speech.keys.start') as string,
    });
    expect(f.service.state().speech).toEqual(DEFAULT_SPEECH_SETTINGS);
  });

  it('shows managed speech keys locked, refuses changing them, and takes the others', async () => {
    fixture = await unlocked({}, { speech: { mode: 'always', keys: { start: ['NumpadEnter'] } } });
    const f = fixture;
    const settings = Settings.parse(await call(f, 'getSettings', {}));
    expect(settings.locked).toEqual(expect.arrayContaining(['speech.mode', 'speech.keys.start']));
    expect(settings.lockedBy).toMatchObject({ 'speech.mode': 'managed', 'speech.keys.start': 'managed' });
    expect(settings.speech.keys.start).toEqual(['NumpadEnter']);
    const refused = (await call(f, 'saveSettings', { speech: { mode: 'off' } })) as Saved;
    expect(refused).toMatchObject({ ok: false, errors: [{ key: 'speech.mode' }] });
    // Every action sent, the locked one unchanged: the others are saved.
    const keys = { ...settings.speech.keys, stop: ['Escape'] };
    const saved = (await call(f, 'saveSettings', { speech: { keys } })) as Saved;
    expect(saved.ok && saved.settings.speech.keys).toEqual(keys);
    expect(f.service.state().speech.keys.stop).toEqual(['Escape']);
    expect(f.service.state().speech.mode).toBe('always');
  });
});
