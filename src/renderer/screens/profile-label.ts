/**
 * What the customer is told the kiosk will ask for. The built-in profiles (src/kiosk/profiles.ts) have
 * translated descriptions; a custom profile shows the label its configuration gives it.
 */
export function customerProfileText(name: string, hostLabel: string | undefined, t: (key: string) => string): string {
  switch (name) {
    case 'age_over_18':
      return t('profile.age_over_18');
    case 'age_over_21':
      return t('profile.age_over_21');
    case 'identity':
      return t('profile.identity');
    case 'full':
      return t('profile.full');
    default:
      return hostLabel ?? name;
  }
}
