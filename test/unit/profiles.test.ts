/**
 * Request profiles: the namespaces sent in `engage` (spec §2.3) for the built-in profiles and the custom
 * profiles of the configuration.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/platform/config.js';
import {
  ALL_MDL_ELEMENTS,
  BUILT_IN_PROFILES,
  MDL_NAMESPACE,
  UnknownProfileError,
  availableProfiles,
  resolveProfile,
} from '../../src/kiosk/profiles.js';

const noCustom = parseConfig({});

describe('built-in profiles', () => {
  it('the mDL namespace is org.iso.18013.5.1', () => {
    expect(MDL_NAMESPACE).toBe('org.iso.18013.5.1');
    for (const profile of Object.values(BUILT_IN_PROFILES)) {
      expect(Object.keys(profile.namespaces)).toEqual([MDL_NAMESPACE]);
    }
  });

  it('age_over_18 asks for age_over_18 and the portrait', () => {
    const profile = resolveProfile(noCustom, 'age_over_18');
    expect(profile.name).toBe('age_over_18');
    expect(profile.namespaces).toEqual({ [MDL_NAMESPACE]: ['age_over_18', 'portrait'] });
  });

  it('age_over_21 asks for age_over_21 with the portrait (and is the default profile)', () => {
    const profile = resolveProfile(noCustom, noCustom.profile);
    expect(profile.name).toBe('age_over_21');
    expect(profile.namespaces).toEqual({ [MDL_NAMESPACE]: ['age_over_21', 'portrait'] });
  });

  it('identity asks for the identity elements including the portrait, and no age flags', () => {
    const elements = resolveProfile(noCustom, 'identity').namespaces[MDL_NAMESPACE] ?? [];
    expect(elements).toEqual(
      expect.arrayContaining([
        'family_name',
        'given_name',
        'birth_date',
        'portrait',
        'document_number',
        'expiry_date',
        'issuing_authority',
        'issuing_country',
      ]),
    );
    expect(elements.some((e) => e.startsWith('age_over_'))).toBe(false);
  });

  it('full asks for every fixed mDL element exactly once', () => {
    const elements = resolveProfile(noCustom, 'full').namespaces[MDL_NAMESPACE] ?? [];
    expect(elements).toEqual([...ALL_MDL_ELEMENTS]);
    expect(new Set(elements).size).toBe(elements.length);
    expect(elements).toEqual(expect.arrayContaining(['family_name', 'portrait', 'age_over_18', 'age_over_21', 'driving_privileges']));
  });

  it('every built-in profile has a label and asks for at least one element', () => {
    for (const [name, profile] of Object.entries(BUILT_IN_PROFILES)) {
      expect(profile.name).toBe(name);
      expect(profile.label.length).toBeGreaterThan(0);
      expect(Object.values(profile.namespaces).flat().length).toBeGreaterThan(0);
    }
  });

  it('every built-in profile is accepted by the wire schema of engage', async () => {
    const { EngageResult } = await import('../../src/common/protocol/messages.js');
    for (const profile of Object.values(BUILT_IN_PROFILES)) {
      expect(EngageResult.safeParse({ type: 'step_result', op: 'engage', status: 'ok', namespaces: profile.namespaces }).success).toBe(
        true,
      );
    }
  });
});

describe('custom profiles from the configuration', () => {
  const config = parseConfig({
    profile: 'bar_entry',
    profiles: {
      bar_entry: { label: 'Bar entry', namespaces: { [MDL_NAMESPACE]: ['age_over_21', 'portrait', 'expiry_date'] } },
      aamva: { namespaces: { [MDL_NAMESPACE]: ['family_name'], 'org.iso.18013.5.1.aamva': ['DHS_compliance', 'veteran'] } },
      age_over_18: { label: 'Age 18+ (no portrait)', namespaces: { [MDL_NAMESPACE]: ['age_over_18'] } },
    },
  });

  it('resolves a custom profile with its label and namespaces', () => {
    const profile = resolveProfile(config, 'bar_entry');
    expect(profile).toEqual({
      name: 'bar_entry',
      label: 'Bar entry',
      namespaces: { [MDL_NAMESPACE]: ['age_over_21', 'portrait', 'expiry_date'] },
    });
  });

  it('a custom profile may span several namespaces; its label defaults to its name', () => {
    const profile = resolveProfile(config, 'aamva');
    expect(profile.label).toBe('aamva');
    expect(profile.namespaces).toEqual({
      [MDL_NAMESPACE]: ['family_name'],
      'org.iso.18013.5.1.aamva': ['DHS_compliance', 'veteran'],
    });
  });

  it('a custom profile may replace a built-in', () => {
    expect(resolveProfile(config, 'age_over_18').namespaces).toEqual({ [MDL_NAMESPACE]: ['age_over_18'] });
    // without the custom entry the built-in is unchanged
    expect(resolveProfile(noCustom, 'age_over_18').namespaces).toEqual({ [MDL_NAMESPACE]: ['age_over_18', 'portrait'] });
  });

  it('built-ins stay available next to custom profiles', () => {
    expect(Object.keys(availableProfiles(config)).sort()).toEqual(['aamva', 'age_over_18', 'age_over_21', 'bar_entry', 'full', 'identity']);
  });

  it('an unknown profile name is refused with the known names', () => {
    let caught: unknown;
    try {
      resolveProfile(config, 'nightclub');
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(UnknownProfileError);
    const message = (caught as Error).message;
    expect(message).toContain('nightclub');
    for (const name of ['age_over_18', 'age_over_21', 'identity', 'full', 'bar_entry', 'aamva']) expect(message).toContain(name);
  });
});
