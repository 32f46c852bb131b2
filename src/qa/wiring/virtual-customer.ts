/**
 * A customer at a counter with no hardware: follows the kiosk's prompts with the virtual phone. When the
 * kiosk is ready it shows the phone's QR code or lays the phone on the reader; on "tap again" it lifts
 * the phone and lays it down again; when a verification has ended it takes the phone away.
 */
import type { KioskView } from '../../common/kiosk-view.js';
import type { VirtualRig } from '../devices/virtual-rig.js';

/** What the customer does with the phone: the virtual rig's own reader, or a real reader through vpcd. */
export type CustomerHands = Pick<VirtualRig, 'showQr' | 'tap' | 'retap' | 'lift'>;

export type Engagement = 'qr' | 'nfc';

export class VirtualCustomer {
  private presented = 0;
  private waitingForEnd = false;
  private retapTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly rig: CustomerHands,
    private readonly engagement: Engagement,
    private readonly verifications: number,
    /** A customer takes a moment before tapping again. */
    private readonly retapDelayMs = 150,
  ) {}

  /** Feed every view of the kiosk here. */
  onView(view: KioskView): void {
    if (view.phase === 'awaiting_card' && this.engagement === 'nfc') {
      clearTimeout(this.retapTimer);
      this.retapTimer = setTimeout(() => this.rig.retap(), this.retapDelayMs);
    }
    if (view.phase === 'ready') this.present();
  }

  /** A verification ended (with an outcome or an error). */
  onVerificationEnded(): void {
    this.waitingForEnd = false;
    clearTimeout(this.retapTimer);
    if (this.engagement === 'nfc') this.rig.lift();
    this.present();
  }

  stop(): void {
    clearTimeout(this.retapTimer);
  }

  private present(): void {
    if (this.waitingForEnd || this.presented >= this.verifications) return;
    this.presented++;
    this.waitingForEnd = true;
    if (this.engagement === 'qr') this.rig.showQr();
    else this.rig.tap();
  }
}
