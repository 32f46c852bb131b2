/**
 * The self-test's camera check, run by the screen because the screen owns the camera: is there a video
 * input, and does the chosen one open? The camera is opened for an instant and every track stopped at
 * once; each finding goes to the host (`reportCamera`) before the host's self-test reads it, so the host
 * sees a camera that works (or why it does not) even when no customer has used it yet.
 */
import type { CameraState } from '../../common/kiosk-api.js';
import { classifyCameraError } from '../qr/camera-errors.js';

export interface CameraReport {
  readonly state: CameraState;
  readonly detail?: string;
}

export type ProbeDevices = Pick<MediaDevices, 'enumerateDevices' | 'getUserMedia'>;

/** A camera that neither opens nor fails within this time counts as an error (e.g. a hung driver). */
export const CAMERA_PROBE_TIMEOUT_MS = 10_000;

function stopAll(stream: MediaStream): void {
  for (const track of stream.getTracks()) track.stop();
}

/**
 * Probes the camera (`deviceId` exact when staff chose one, else the system default) and hands each report
 * to `report`, in order, awaiting it. Returns the last report. Never throws.
 */
export async function probeCamera(
  media: ProbeDevices | undefined,
  deviceId: string | null,
  report: (camera: CameraReport) => Promise<unknown>,
  timeoutMs = CAMERA_PROBE_TIMEOUT_MS,
): Promise<CameraReport> {
  const send = async (camera: CameraReport): Promise<CameraReport> => {
    await report(camera);
    return camera;
  };
  if (media === undefined) return send({ state: 'missing', detail: 'no media devices (navigator.mediaDevices)' });
  let devices: MediaDeviceInfo[];
  try {
    devices = await media.enumerateDevices();
  } catch (e) {
    return send(classifyCameraError(e));
  }
  if (!devices.some((d) => d.kind === 'videoinput')) return send({ state: 'missing', detail: 'no video input' });

  const video: MediaTrackConstraints | boolean = deviceId === null ? true : { deviceId: { exact: deviceId } };
  const opening = media.getUserMedia({ video, audio: false });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<'timeout'>((done) => {
    timer = setTimeout(() => done('timeout'), timeoutMs);
  });
  let outcome: MediaStream | 'timeout';
  try {
    outcome = await Promise.race([opening, timedOut]);
  } catch (e) {
    return await send(classifyCameraError(e));
  } finally {
    clearTimeout(timer);
  }
  if (outcome === 'timeout') {
    // If it opens after all, it must not stay on.
    opening.then(stopAll, () => undefined);
    return send({ state: 'error', detail: `the camera did not open within ${Math.round(timeoutMs / 1_000)} s` });
  }
  stopAll(outcome);
  await send({ state: 'active' });
  return send({ state: 'off' });
}
