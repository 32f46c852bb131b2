/**
 * The camera of this screen, as its own preview reported it: the status bar and the Ready screen show
 * this, not whatever another screen of the same kiosk (another tab, another browser) told the host last.
 * A problem (denied, missing, unplugged, error) is kept until the camera runs again: the preview turns the
 * camera off whenever Ready goes, and that must not hide a blocked camera from staff.
 */
import { useCallback, useMemo, useState } from 'react';
import type { CameraState } from '../../common/kiosk-api.js';

const PROBLEMS: ReadonlySet<CameraState> = new Set<CameraState>(['denied', 'missing', 'unplugged', 'error']);

export interface CameraStatus {
  /** What to show: the last problem until the camera runs again, else the current state. */
  readonly shown: CameraState;
  readonly report: (state: CameraState) => void;
}

/** The rule, without React: the state shown after `previous` (as shown) and a new report. */
export function nextShownCamera(previous: CameraState, report: CameraState): CameraState {
  if (PROBLEMS.has(report) || report === 'active') return report;
  // `off` or `starting` after a problem keep the problem (each Ready tries the camera again: the prompt
  // must not offer it for a moment each time); otherwise the state as reported.
  return PROBLEMS.has(previous) ? previous : report;
}

export function useCameraStatus(): CameraStatus {
  const [shown, setShown] = useState<CameraState>('off');
  const report = useCallback((state: CameraState) => setShown((previous) => nextShownCamera(previous, state)), []);
  return useMemo(() => ({ shown, report }), [shown, report]);
}
