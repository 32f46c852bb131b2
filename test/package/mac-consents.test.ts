/**
 * What a Mac needs from the package before the kiosk may use the camera and Bluetooth: the hardened runtime's
 * entitlements (build/entitlements.mac.plist) and the usage strings TCC shows (mac.extendInfo). Without
 * NSBluetoothAlwaysUsageDescription TCC ends the app at its first CoreBluetooth call; without the camera
 * entitlement the hardened runtime denies the camera whatever the user answers.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface MacSection {
  readonly hardenedRuntime?: unknown;
  readonly entitlements?: unknown;
  readonly entitlementsInherit?: unknown;
  readonly extendInfo?: Record<string, unknown>;
}

const yaml = (file: string): { mac?: MacSection; extends?: unknown } =>
  load(readFileSync(join(REPO, file), 'utf8')) as { mac?: MacSection; extends?: unknown };

/** The `<key>…</key><true/>` entries of a plist (its keys are all booleans here). */
function trueKeys(plist: string): string[] {
  const body = plist.replace(/<!--[\s\S]*?-->/g, '');
  return [...body.matchAll(/<key>([^<]+)<\/key>\s*<true\/>/g)].map((m) => m[1] ?? '');
}

describe('macOS: entitlements and usage strings', () => {
  const mac = yaml('electron-builder.yml').mac ?? {};

  it('the hardened runtime, with allow-jit and the camera entitlement, for the app and its helpers; no sandbox', () => {
    expect(mac.hardenedRuntime).toBe(true);
    expect(mac.entitlements).toBe('build/entitlements.mac.plist');
    expect(mac.entitlementsInherit).toBe('build/entitlements.mac.plist');
    const keys = trueKeys(readFileSync(join(REPO, 'build/entitlements.mac.plist'), 'utf8'));
    expect(keys.sort()).toEqual(['com.apple.security.cs.allow-jit', 'com.apple.security.device.camera']);
  });

  it('the camera and Bluetooth usage strings TCC shows', () => {
    for (const key of ['NSCameraUsageDescription', 'NSBluetoothAlwaysUsageDescription', 'NSBluetoothPeripheralUsageDescription']) {
      expect(typeof mac.extendInfo?.[key], key).toBe('string');
      expect(String(mac.extendInfo?.[key]).length, key).toBeGreaterThan(20);
    }
  });

  it('the QA flavour keeps them (it extends the production file and sets no mac section of its own)', () => {
    const qa = yaml('electron-builder.qa.yml');
    expect(qa.extends).toBe('electron-builder.yml');
    expect(qa.mac).toBeUndefined();
  });
});
