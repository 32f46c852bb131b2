/**
 * The frame of every screen: the prompt as the page's one `<h1>`, focused when the screen appears (so a
 * screen-reader or keyboard user starts there) and announced through the live region.
 */
import { useEffect, useId, useRef, type ReactNode } from 'react';
import { useAnnounce } from './announcer.js';

export type ScreenTone = 'calm' | 'progress' | 'problem' | 'staff';

export function ScreenFrame(props: {
  title: string;
  tone: ScreenTone;
  icon?: ReactNode;
  children?: ReactNode;
  className?: string;
}): ReactNode {
  const headingId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    heading.current?.focus({ preventScroll: true });
  }, []);
  useAnnounce(props.title);
  return (
    <section className={`screen screen--${props.tone}${props.className ? ` ${props.className}` : ''}`} aria-labelledby={headingId}>
      {props.icon ? (
        <div className="screen-icon" aria-hidden="true">
          {props.icon}
        </div>
      ) : null}
      <h1 id={headingId} ref={heading} tabIndex={-1} className={props.tone === 'staff' ? 'staff-title' : 'prompt'}>
        {props.title}
      </h1>
      {props.children}
    </section>
  );
}

/** Technical detail for staff, in smaller type under the customer's line. */
export function StaffDetail(props: { children: ReactNode }): ReactNode {
  const { children } = props;
  return <p className="staff-detail">{children}</p>;
}
