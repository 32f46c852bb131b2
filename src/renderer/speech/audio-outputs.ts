/**
 * The audio outputs and which of them is a headset. A headset is an output whose name contains
 * `speech.headsetOutput` (when staff set one: the kiosk's own jack, a USB headset adapter) or, when that is
 * empty, says headset, headphone, earphone or earbud. Plugging one in fires `devicechange`.
 *
 * Output names need the page's media permission: without it Chromium lists outputs with empty labels, no
 * headset can be recognised, and speech stays on the speaker rules (the kiosk's camera permission covers
 * it in Electron; in a plain browser without camera access, a configured output cannot be found either).
 */

export interface AudioOutput {
  readonly deviceId: string;
  readonly label: string;
}

const HEADSET_WORDS = /head(set|phone)|earphone|earbud/i;

export function isHeadset(output: AudioOutput, configured: string): boolean {
  const wanted = configured.trim();
  if (wanted.length > 0) return output.label.toLowerCase().includes(wanted.toLowerCase());
  return HEADSET_WORDS.test(output.label);
}

export interface HeadsetChoice {
  readonly headset: AudioOutput;
  /** The headset is the default output already (nothing to route: every voice reaches it). */
  readonly isDefault: boolean;
}

/**
 * The headset among the outputs, or null. Chromium lists the default output twice: as `default`
 * ("Default - <name>") and under its own id; a headset that is the default needs no routing.
 */
export function findHeadset(outputs: readonly AudioOutput[], configured: string): HeadsetChoice | null {
  const named = outputs.filter((output) => output.deviceId !== 'default' && output.deviceId !== 'communications');
  const headset = named.find((output) => isHeadset(output, configured));
  if (headset) {
    const defaultOutput = outputs.find((output) => output.deviceId === 'default');
    const isDefault = defaultOutput !== undefined && headset.label.length > 0 && defaultOutput.label.includes(headset.label);
    return { headset, isDefault };
  }
  // Only the default entry names it (some platforms list nothing else).
  const onlyDefault = outputs.find((output) => output.deviceId === 'default' && isHeadset(output, configured));
  return onlyDefault ? { headset: onlyDefault, isDefault: true } : null;
}

/** The audio outputs now (empty when the page cannot list devices). */
export async function listAudioOutputs(media: MediaDevices | undefined): Promise<AudioOutput[]> {
  if (!media?.enumerateDevices) return [];
  try {
    const devices = await media.enumerateDevices();
    return devices
      .filter((device) => device.kind === 'audiooutput')
      .slice(0, 50)
      .map((device) => ({ deviceId: device.deviceId.slice(0, 512), label: device.label.slice(0, 200) }));
  } catch {
    return [];
  }
}

/** Calls `listener` with the outputs now and after every device change; returns the unsubscribe. */
export function watchAudioOutputs(media: MediaDevices | undefined, listener: (outputs: AudioOutput[]) => void): () => void {
  let stopped = false;
  const refresh = (): void => {
    void listAudioOutputs(media).then((outputs) => {
      if (!stopped) listener(outputs);
    });
  };
  refresh();
  media?.addEventListener('devicechange', refresh);
  return () => {
    stopped = true;
    media?.removeEventListener('devicechange', refresh);
  };
}
