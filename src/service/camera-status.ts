/**
 * The camera as the screen reports it, for the screen state and the self-test. A problem is kept until
 * the camera runs again: the screen turns the camera off whenever it leaves Ready, and that must not hide
 * a blocked or unplugged camera from staff.
 */
import type { CameraState } from '../common/kiosk-api.js';

const CAMERA_PROBLEMS: ReadonlySet<CameraState> = new Set<CameraState>(['denied', 'missing', 'unplugged', 'error']);

export interface CameraReport {
  readonly state: CameraState;
  readonly detail?: string;
}

/** The camera as the health record carries it: the state and whether it ever worked, never a detail, id or label. */
export interface CameraHealth {
  /** As {@link CameraStatus.state}: a problem is kept until the camera runs again. */
  readonly state: CameraState;
  /** The camera has delivered frames since this service started. */
  readonly worked: boolean;
}

export class CameraStatus {
  private last: CameraReport | undefined;
  private problem: CameraReport | undefined;
  /** The camera has delivered frames since this service started. */
  private worked = false;

  /** Takes the screen's report: whether the state changed, and whether it is a problem. */
  report(state: CameraState, detail: string | undefined): { changed: boolean; problem: boolean } {
    const changed = this.last?.state !== state;
    const report = detail === undefined ? { state } : { state, detail };
    this.last = report;
    const problem = CAMERA_PROBLEMS.has(state);
    if (problem) this.problem = report;
    if (state === 'active') {
      this.problem = undefined;
      this.worked = true;
    }
    return { changed, problem };
  }

  /** What the screen state shows: the kept problem, else the last report. */
  get state(): CameraState {
    return this.problem?.state ?? this.last?.state ?? 'off';
  }

  /**
   * What the health record and the metrics carry; undefined when no screen has reported its camera yet
   * (a kiosk starting, a headless one). The detail stays out: it is free text from the browser and can
   * name the device.
   */
  forHealth(): CameraHealth | undefined {
    return this.last && { state: this.state, worked: this.worked };
  }

  /** What the self-test judges; undefined when no screen has reported its camera yet. */
  forSelfTest(): (CameraReport & { readonly worked: boolean }) | undefined {
    const camera = this.problem ?? this.last;
    return camera && { ...camera, worked: this.worked };
  }
}
