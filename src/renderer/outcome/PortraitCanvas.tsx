/**
 * The portrait, large, for the face check: decoded off the markup (no <img>, no object URL) and drawn on a
 * canvas. The decoded bitmap is closed as soon as it is drawn; on unmount a pending decode is cancelled
 * and the canvas is shrunk to 0×0 so its pixels are released with the outcome.
 */
import { useEffect, useRef, useState, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { decodePortrait } from './portrait-decoder.js';
import type { PortraitSource } from './present.js';

export type PortraitState = 'loading' | 'shown' | 'failed';

/**
 * `unverified`: the document was not accepted (or its verdict is unclear): the photo carries a "not
 * verified" band over it, so nobody matches a face against a photo the kiosk did not accept.
 */
export function PortraitCanvas(props: {
  source: Exclude<PortraitSource, { state: 'absent' }>;
  onState?: (state: PortraitState) => void;
  unverified?: boolean;
}): ReactNode {
  const { t } = useTranslation('outcome');
  const canvas = useRef<HTMLCanvasElement>(null);
  const { source } = props;
  const [state, setState] = useState<PortraitState>(source.state === 'image' ? 'loading' : 'failed');
  const { onState } = props;
  useEffect(() => {
    onState?.(state);
  }, [onState, state]);

  // Keyed by the portrait's content, not by the source object: every state the host pushes (session
  // freshness, a device, the camera) brings the same outcome in new objects, and decoding again would
  // blank the picture and show "Loading photo…" in the middle of the result.
  const imageKey = source.state === 'image' ? `${source.kind}|${source.key}` : null;
  useEffect(() => {
    const element = canvas.current;
    if (source.state !== 'image' || element === null) {
      setState('failed');
      return undefined;
    }
    setState('loading');
    const controller = new AbortController();
    decodePortrait(source.bytes, source.kind, controller.signal).then(
      (bitmap) => {
        const context = controller.signal.aborted ? null : element.getContext('2d');
        if (context === null) {
          bitmap.close();
          if (!controller.signal.aborted) setState('failed');
          return;
        }
        element.width = bitmap.width;
        element.height = bitmap.height;
        context.drawImage(bitmap, 0, 0);
        bitmap.close();
        setState('shown');
      },
      () => {
        if (!controller.signal.aborted) setState('failed');
      },
    );
    return () => {
      controller.abort();
      element.width = 0;
      element.height = 0;
    };
    // `source` is read when the key changes only: same key, same bytes.
  }, [imageKey]);

  return (
    <figure className={`outcome-portrait${props.unverified === true ? ' outcome-portrait--unverified' : ''}`} data-state={state}>
      {props.unverified === true && state === 'shown' ? (
        <p className="outcome-portrait-unverified" data-testid="portrait-unverified">
          <span aria-hidden="true">✕ </span>
          {t('portrait.notVerified')}
        </p>
      ) : null}
      <canvas
        ref={canvas}
        className="outcome-portrait-canvas"
        data-testid="portrait"
        data-portrait-state={state}
        role="img"
        aria-label={state === 'shown' ? t('portrait.label') : t(state === 'failed' ? 'portrait.failed' : 'portrait.loading')}
        width={0}
        height={0}
      />
      {state === 'shown' ? null : (
        <figcaption className={`outcome-portrait-note outcome-portrait-note--${state}`} aria-hidden="true">
          {t(state === 'failed' ? 'portrait.failed' : 'portrait.loading')}
        </figcaption>
      )}
    </figure>
  );
}
