/**
 * One polite live region for the whole app: every screen's prompt is announced through it. It stays
 * mounted across screens, because a region that appears together with its text is often not read out.
 */
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';

const AnnounceContext = createContext<(text: string) => void>(() => undefined);
const AnnouncementContext = createContext('');

export function AnnouncerProvider(props: { children: ReactNode }): ReactNode {
  const [text, setText] = useState('');
  return (
    <AnnounceContext.Provider value={setText}>
      <AnnouncementContext.Provider value={text}>{props.children}</AnnouncementContext.Provider>
    </AnnounceContext.Provider>
  );
}

/** The region itself; rendered once, inside the page's main landmark. */
export function LiveRegion(): ReactNode {
  const text = useContext(AnnouncementContext);
  return (
    <div className="sr-only" aria-live="polite" aria-atomic="true" data-testid="announcer">
      {text}
    </div>
  );
}

/** Announces `text` whenever it changes. */
export function useAnnounce(text: string): void {
  const announce = useContext(AnnounceContext);
  useEffect(() => {
    announce(text);
  }, [announce, text]);
}
