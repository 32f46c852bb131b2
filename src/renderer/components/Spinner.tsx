/** An indeterminate "working" mark for screens without steps (its animation stops under reduced motion). */
import type { ReactNode } from 'react';

export function Spinner(): ReactNode {
  return (
    <div className="spinner" aria-hidden="true">
      <span />
      <span />
      <span />
    </div>
  );
}
