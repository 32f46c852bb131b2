import { describe, expect, it } from 'vitest';
import { blockedShortcut, type KeyInput } from '../../../src/main/shortcuts.js';

const key = (k: string, mods: Partial<KeyInput> = {}): KeyInput => ({
  key: k,
  code: '',
  control: false,
  meta: false,
  alt: false,
  shift: false,
  ...mods,
});

describe('blockedShortcut', () => {
  it('names the kind of each blocked shortcut on Windows and Linux', () => {
    const table: [KeyInput, string][] = [
      [key('F5'), 'reload'],
      [key('F5', { shift: true }), 'reload'],
      [key('r', { control: true }), 'reload'],
      [key('R', { control: true, shift: true }), 'reload'],
      [key('F12'), 'devtools'],
      [key('I', { control: true, shift: true }), 'devtools'],
      [key('j', { control: true, shift: true }), 'devtools'],
      [key('=', { control: true }), 'zoom'],
      [key('_', { control: true, shift: true }), 'zoom'],
      [key('0', { control: true }), 'zoom'],
      [key('Add', { control: true, code: 'NumpadAdd' }), 'zoom'],
      [key('w', { control: true }), 'close'],
      [key('W', { control: true, shift: true }), 'close'],
      [key('F4', { control: true }), 'close'],
      [key('F4', { alt: true }), 'close'],
      [key('q', { control: true }), 'close'],
      [key('ArrowLeft', { alt: true }), 'navigate'],
      [key('BrowserBack'), 'navigate'],
    ];
    for (const [input, kind] of table) expect(blockedShortcut(input, 'win32'), JSON.stringify(input)).toBe(kind);
  });

  it('macOS uses Cmd, and Cmd+Alt+I opens devtools', () => {
    expect(blockedShortcut(key('r', { meta: true }), 'darwin')).toBe('reload');
    expect(blockedShortcut(key('q', { meta: true }), 'darwin')).toBe('close');
    expect(blockedShortcut(key('h', { meta: true }), 'darwin')).toBe('hide');
    expect(blockedShortcut(key('m', { meta: true }), 'darwin')).toBe('hide');
    expect(blockedShortcut(key('i', { meta: true, alt: true }), 'darwin')).toBe('devtools');
    // Cmd is the Windows key elsewhere: the OS owns it, the app does not block it.
    expect(blockedShortcut(key('r', { meta: true }), 'linux')).toBeNull();
  });

  it('never touches typing', () => {
    for (const k of ['a', '0', '1', '-', '+', '=', 'Enter', 'Backspace', 'Tab', 'Escape', 'ArrowLeft', 'F1']) {
      expect(blockedShortcut(key(k), 'linux'), k).toBeNull();
    }
    for (const k of ['a', 'c', 'v', 'x', 'z']) expect(blockedShortcut(key(k, { control: true }), 'linux'), `Ctrl+${k}`).toBeNull();
    expect(blockedShortcut(key('V', { control: true, shift: true }), 'linux')).toBeNull();
  });
});
