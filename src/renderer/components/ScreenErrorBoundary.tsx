/**
 * The screen's last line of defence: a component that throws while rendering would otherwise leave a blank
 * window on the counter. The boundary reports the error (`reportError`, kind `render`), shows a calm
 * "the screen is restarting" state, and after a few seconds renders the app again from scratch; the kiosk
 * itself (main side) never stopped, so the new screen picks up its current state.
 */
import { Component, type ErrorInfo, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { rendererError, type ReportError } from '../api/error-reporting.js';

/** How long the restarting state shows before the app is rendered again. */
export const RESTART_SCREEN_MS = 3_000;

/** Shown while the screen restarts: no kiosk data, nothing to press. */
export function RestartingScreen(): ReactNode {
  const { t } = useTranslation();
  return (
    <div className="app">
      <main data-screen="restarting" className="main main--restarting">
        <div className="screen-host">
          <section className="screen screen--calm" aria-labelledby="restarting-title">
            <h1 id="restarting-title" className="prompt">
              {t('restarting.title')}
            </h1>
            <p className="lead" role="status">
              {t('restarting.body')}
            </p>
          </section>
        </div>
      </main>
    </div>
  );
}

interface Props {
  readonly report: ReportError;
  readonly restartMs?: number;
  readonly children: ReactNode;
}

interface State {
  readonly failed: boolean;
  /** Changes on every restart, so the app is mounted afresh (nothing of the broken tree is kept). */
  readonly generation: number;
}

export class ScreenErrorBoundary extends Component<Props, State> {
  override state: State = { failed: false, generation: 0 };
  private timer: ReturnType<typeof setTimeout> | undefined;

  static getDerivedStateFromError(): Partial<State> {
    return { failed: true };
  }

  override componentDidCatch(error: unknown, info: ErrorInfo): void {
    this.props.report(rendererError('render', error, info.componentStack));
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.setState((s) => ({ failed: false, generation: s.generation + 1 }));
    }, this.props.restartMs ?? RESTART_SCREEN_MS);
  }

  override componentWillUnmount(): void {
    clearTimeout(this.timer);
  }

  override render(): ReactNode {
    if (this.state.failed) return <RestartingScreen />;
    return <RestartBoundaryKey key={this.state.generation}>{this.props.children}</RestartBoundaryKey>;
  }
}

function RestartBoundaryKey(props: { children: ReactNode }): ReactNode {
  return props.children;
}
