/**
 * Page instrumentation the speech browser tests share (added with addInitScript, never in production code):
 * no OS voice (so the built-in voice speaks, the path this machine can observe) and audio outputs the test
 * controls — `globalThis.__setOutputs([...])` replaces the list and fires `devicechange` (a headset plugged in
 * or out).
 */
export const FAKE_AUDIO_OUTPUTS_SCRIPT = `(() => {
  if (globalThis.speechSynthesis) Object.defineProperty(globalThis.speechSynthesis, 'getVoices', { value: () => [] });
  const media = navigator.mediaDevices;
  const real = media.enumerateDevices.bind(media);
  let outputs = [{ deviceId: 'default', kind: 'audiooutput', label: 'Default - Built-in Speaker', groupId: 'g0' }];
  media.enumerateDevices = async () => [...(await real()).filter((d) => d.kind !== 'audiooutput'), ...outputs];
  globalThis.__setOutputs = (next) => { outputs = next; media.dispatchEvent(new Event('devicechange')); };
})();`;
