/**
 * Line icons drawn with presentation attributes only (the CSP forbids inline style). Decorative: every
 * screen says in words what the icon shows, so they are hidden from assistive technology by the caller.
 */
import type { ReactNode } from 'react';

function Svg(props: { children: ReactNode }): ReactNode {
  return (
    <svg
      viewBox="0 0 64 64"
      width="96"
      height="96"
      fill="none"
      stroke="currentColor"
      strokeWidth="3.5"
      strokeLinecap="round"
      strokeLinejoin="round"
      focusable="false"
    >
      {props.children}
    </svg>
  );
}

export function PhoneTapIcon(): ReactNode {
  return (
    <Svg>
      <rect x="18" y="6" width="22" height="40" rx="4" />
      <line x1="26" y1="40" x2="32" y2="40" />
      <path d="M46 18c3 3 3 9 0 12M51 13c6 6 6 16 0 22" />
      <rect x="8" y="50" width="48" height="8" rx="2" />
    </Svg>
  );
}

export function QrIcon(): ReactNode {
  return (
    <Svg>
      <rect x="8" y="8" width="18" height="18" rx="2" />
      <rect x="38" y="8" width="18" height="18" rx="2" />
      <rect x="8" y="38" width="18" height="18" rx="2" />
      <path d="M38 38h6v6h-6zM50 38h6M38 50h6v6M50 50h6v6h-6" />
    </Svg>
  );
}

export function BluetoothIcon(): ReactNode {
  return (
    <Svg>
      <path d="M22 20l20 22-10 10V12l10 10-20 22" />
    </Svg>
  );
}

export function PhoneCheckIcon(): ReactNode {
  return (
    <Svg>
      <rect x="16" y="6" width="32" height="52" rx="5" />
      <path d="M24 32l6 6 11-13" />
    </Svg>
  );
}

export function PhoneAwayIcon(): ReactNode {
  return (
    <Svg>
      <rect x="22" y="4" width="22" height="38" rx="4" />
      <path d="M33 48v10M27 53l6 6 6-6" />
    </Svg>
  );
}

export function WarningIcon(): ReactNode {
  return (
    <Svg>
      <path d="M32 8L4 56h56z" />
      <line x1="32" y1="26" x2="32" y2="40" />
      <circle cx="32" cy="47" r="1.5" />
    </Svg>
  );
}

export function UnplugIcon(): ReactNode {
  return (
    <Svg>
      <path d="M20 28h14v14H20zM24 28v-8M30 28v-8M27 42v6c0 6 4 10 10 10h8" />
      <path d="M46 10l8 8M54 10l-8 8" />
    </Svg>
  );
}

export function StaffIcon(): ReactNode {
  return (
    <Svg>
      <circle cx="32" cy="20" r="10" />
      <path d="M12 56c0-11 9-18 20-18s20 7 20 18" />
    </Svg>
  );
}

export function ClosedIcon(): ReactNode {
  return (
    <Svg>
      <circle cx="32" cy="32" r="24" />
      <line x1="20" y1="32" x2="44" y2="32" />
    </Svg>
  );
}

export function HourglassIcon(): ReactNode {
  return (
    <Svg>
      <path d="M18 6h28M18 58h28M22 6c0 14 20 16 20 26S22 44 22 58M42 6c0 14-20 16-20 26s20 12 20 26" />
    </Svg>
  );
}

/** A bold arrow pointing down; turned by CSS for left and right (the reader pointer on Ready). */
export function ArrowDownIcon(): ReactNode {
  return (
    <svg
      viewBox="0 0 64 64"
      width="72"
      height="72"
      fill="none"
      stroke="currentColor"
      strokeWidth="7"
      strokeLinecap="round"
      strokeLinejoin="round"
      focusable="false"
    >
      <path d="M32 8v44M14 34l18 18 18-18" />
    </svg>
  );
}
