#!/bin/bash
# deb post-install script of the mDL Kiosk (electron-builder `deb.afterInstall`). electron-builder fills
# in ${executable} and ${sanitizedProductName}. A custom script REPLACES electron-builder's own, so this
# one does the same duties first (command link, Chromium sandbox helper, desktop databases, AppArmor
# profile). It grants NO capabilities: file capabilities on the Electron binary would reach every Chromium
# process it starts and every account that runs it, and make the loader refuse the libraries Electron finds
# beside itself ($ORIGIN), so the app would not start. Bluetooth kiosks get CAP_NET_RAW and CAP_NET_ADMIN
# from their systemd unit instead (AmbientCapabilities=; docs/installer-guide.md §8). electron-builder's
# default after-remove script still applies and undoes the command link and the AppArmor profile.
set -u

APP_DIR='/opt/${sanitizedProductName}'
BINARY="$APP_DIR/${executable}"
LINK='/usr/bin/${executable}'

# 1. `${executable}` on the PATH, through update-alternatives where the system has it.
if command -v update-alternatives >/dev/null 2>&1; then
  if [ -L "$LINK" ] && [ "$(readlink "$LINK")" != '/etc/alternatives/${executable}' ]; then
    rm -f "$LINK"
  fi
  update-alternatives --install "$LINK" '${executable}' "$BINARY" 100 || ln -sf "$BINARY" "$LINK"
else
  ln -sf "$BINARY" "$LINK"
fi

# 2. Chromium's setuid sandbox helper is needed only where unprivileged user namespaces do not work.
if [ -L /proc/self/ns/user ] && unshare --user true 2>/dev/null; then
  chmod 0755 "$APP_DIR/chrome-sandbox" || true
else
  chmod 4755 "$APP_DIR/chrome-sandbox" || true
fi

# 3. Desktop entry and MIME databases.
command -v update-mime-database >/dev/null 2>&1 && { update-mime-database /usr/share/mime || true; }
command -v update-desktop-database >/dev/null 2>&1 && { update-desktop-database /usr/share/applications || true; }

# 4. AppArmor profile shipped by electron-builder (Ubuntu 24.04+ restricts unprivileged user namespaces
#    to profiled programs); installed only where this AppArmor accepts it, not loaded inside a chroot.
PROFILE_SOURCE="$APP_DIR/resources/apparmor-profile"
PROFILE_TARGET='/etc/apparmor.d/${executable}'
if [ -f "$PROFILE_SOURCE" ] && apparmor_status --enabled >/dev/null 2>&1; then
  if apparmor_parser --skip-kernel-load --debug "$PROFILE_SOURCE" >/dev/null 2>&1; then
    cp -f "$PROFILE_SOURCE" "$PROFILE_TARGET"
    if ! { [ -x /usr/bin/ischroot ] && /usr/bin/ischroot; }; then
      apparmor_parser --replace --write-cache --skip-read-cache "$PROFILE_TARGET" || true
    fi
  else
    echo "mdl-kiosk: this AppArmor does not accept the bundled profile; not installed" >&2
  fi
fi

exit 0
