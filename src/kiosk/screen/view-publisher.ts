/**
 * The `KioskView` the screen renders, and its listeners. Every change is a patch over the last view, stamped
 * with the time and the devices' status; counter-only progress (APDUs, BLE messages) is published at most
 * every PROGRESS_INTERVAL_MS, since the screen needs it a few times a second at most.
 */
import type { KioskView } from '../../common/kiosk-view.js';
import type { Logger } from '../../platform/log.js';
import type { DeviceWatch } from '../device-watch.js';
import { Listeners } from '../listeners.js';
import type { RunProgress } from '../verification/results.js';

const PROGRESS_INTERVAL_MS = 100;

export interface ViewPublisherOptions {
  /** The request profile the first view names. */
  readonly profile: string;
  readonly devices: DeviceWatch;
  readonly log: Logger;
  readonly now: () => number;
}

export class ViewPublisher {
  private view: KioskView;
  private readonly listeners = new Listeners<KioskView>();
  private progressTimer: NodeJS.Timeout | undefined;
  private pendingProgress: KioskView['progress'] | undefined;

  constructor(private readonly options: ViewPublisherOptions) {
    this.view = {
      phase: 'starting',
      prompt: 'starting',
      transport: null,
      role: null,
      progress: { step: 0, apdus: 0, bleMessages: 0 },
      outcome: null,
      error: null,
      profile: options.profile,
      devices: options.devices.status,
      backend: 'connecting',
      at: options.now(),
    };
  }

  get current(): KioskView {
    return this.view;
  }

  onView(listener: (view: KioskView) => void): () => void {
    return this.listeners.add(listener);
  }

  /** Publishes the view changed by `patch` (with any progress still waiting to be published). */
  update(patch: Partial<KioskView>): void {
    const pending = this.pendingProgress;
    this.pendingProgress = undefined;
    clearTimeout(this.progressTimer);
    if (pending && !patch.progress) patch = { ...patch, progress: pending };
    const { devices, log, now } = this.options;
    // Device availability is re-read on every change of phase and on the ports' own change events.
    if (patch.phase !== undefined && patch.phase !== this.view.phase) devices.refresh();
    this.view = { ...this.view, ...patch, devices: devices.status, at: now() };
    this.listeners.notify(this.view, (e) => {
      log.error({ event: 'view_listener_failed', detail: e instanceof Error ? e.message : 'unknown' }, 'view listener threw');
    });
  }

  /** A verification's progress: a new phase, prompt, role or step at once, counters alone a little later. */
  progress(p: RunProgress): void {
    const progress = { step: p.step, apdus: p.apdus, bleMessages: p.bleMessages };
    const v = this.view;
    if (v.phase === p.phase && v.prompt === p.prompt && v.role === p.role && v.progress.step === p.step) {
      this.publishProgressSoon(progress);
    } else {
      this.update({ phase: p.phase, prompt: p.prompt, transport: p.transport, role: p.role, progress });
    }
  }

  /** No timed progress publishing any more (the kiosk stops; its last view follows with `update`). */
  stop(): void {
    clearTimeout(this.progressTimer);
  }

  /** Counters change per APDU and per BLE message; the screen needs them a few times a second at most. */
  private publishProgressSoon(progress: KioskView['progress']): void {
    const scheduled = this.pendingProgress !== undefined;
    this.pendingProgress = progress;
    if (scheduled) return;
    this.progressTimer = setTimeout(() => {
      const latest = this.pendingProgress;
      if (latest) this.update({ progress: latest });
    }, PROGRESS_INTERVAL_MS);
  }
}
