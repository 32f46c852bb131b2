/* The virtual phone page's script (QA only). Plain DOM, no framework, no inline code (strict CSP). */
/* global document, location, fetch, setTimeout, URLSearchParams */

const token = new URLSearchParams(location.hash.slice(1)).get('token') ?? '';
const $ = (id) => document.getElementById(id);
const form = $('settings');
const POLL_MS = 700;

function say(text) {
  $('message').textContent = text;
  $('error').textContent = '';
}

function fail(text) {
  $('error').textContent = text;
}

async function api(path, body) {
  const init = { headers: { authorization: `Bearer ${token}` }, cache: 'no-store' };
  if (body !== undefined) {
    init.method = 'POST';
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const data = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw new Error(typeof data.error === 'string' ? data.error : `HTTP ${res.status}`);
  return data;
}

function fillForm(s) {
  const check = (name, value) => {
    for (const input of form.querySelectorAll(`input[name="${name}"]`)) input.checked = input.value === value;
  };
  check('profile', s.profile);
  check('consent', s.consent);
  check('credential', s.credential);
  check('portrait', s.portrait);
  check('deviceAuth', s.deviceAuth);
  form.elements.consentSeconds.value = String(s.consentDelayMs / 1000);
  form.elements.fieldDrop.checked = s.fieldDropAtApdu !== null;
  form.elements.fieldDropAtApdu.value = String(s.fieldDropAtApdu ?? 2);
  form.elements.bleDrop.checked = s.bleDropAfterChunks !== null;
  form.elements.bleDropAfterChunks.value = String(s.bleDropAfterChunks ?? 1);
  form.elements.wrongIdent.checked = s.wrongIdent;
  check('holder', s.holder);
  form.elements.nfcReader.value = s.nfcReader;
  form.elements.bluetooth.value = s.bluetooth;
}

function readForm() {
  const radio = (name) => form.querySelector(`input[name="${name}"]:checked`)?.value;
  const whole = (name) => Number(form.elements[name].value);
  return {
    profile: radio('profile'),
    consent: radio('consent'),
    consentDelayMs: Math.round(Number(form.elements.consentSeconds.value || '0') * 1000),
    credential: radio('credential'),
    portrait: radio('portrait'),
    deviceAuth: radio('deviceAuth'),
    fieldDropAtApdu: form.elements.fieldDrop.checked ? whole('fieldDropAtApdu') : null,
    bleDropAfterChunks: form.elements.bleDrop.checked ? whole('bleDropAfterChunks') : null,
    wrongIdent: form.elements.wrongIdent.checked,
    holder: radio('holder'),
    nfcReader: form.elements.nfcReader.value,
    bluetooth: form.elements.bluetooth.value,
  };
}

function show(state) {
  $('kiosk-phase').textContent = state.kioskPhase ?? '–';
  const last = state.last;
  $('last-action').textContent = last ? last.action : '–';
  const outcome = last?.outcome;
  $('last-outcome').textContent = outcome ? outcome.kind : last ? 'in progress' : '–';
  $('last-outcome').dataset.kind = outcome ? outcome.kind : '';
  $('last-detail').textContent = outcome
    ? [outcome.engagement, outcome.bleMode, outcome.reason, outcome.detail, outcome.sharedElements.length ? `shared ${outcome.sharedElements.length} element(s)` : undefined]
        .filter((x) => x)
        .join(' · ')
    : '–';
  const figure = $('qr');
  if (state.qr) {
    figure.hidden = false;
    if ($('qr-image').getAttribute('src') !== state.qr.image) $('qr-image').setAttribute('src', state.qr.image);
    $('qr-text').value = state.qr.text;
  } else {
    figure.hidden = true;
  }
  $('scan-button').disabled = !state.canScan;
  const backend = state.backend;
  $('backend-state').textContent = backend === null ? 'not embedded' : !backend.online ? 'off the air' : backend.silent ? 'silent (answers nothing)' : 'answering';
  $('backend-silent').disabled = backend === null || backend.silent;
  $('backend-answer').disabled = backend === null || !backend.silent;
}

async function poll() {
  try {
    show(await api('/api/state'));
  } catch (e) {
    fail(e.message);
  }
  setTimeout(poll, POLL_MS);
}

document.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-action]');
  if (!button) return;
  const action = button.dataset.action;
  api('/api/action', { action })
    .then((result) => {
      if (action === 'scan_qr') say(result.scan.accepted ? 'The kiosk took the scan.' : `The kiosk refused the scan: ${result.scan.reason ?? 'no reason'}.`);
      else say(`${button.textContent}: done.`);
      return api('/api/state').then(show);
    })
    .catch((e) => fail(e.message));
});

form.addEventListener('submit', (event) => {
  event.preventDefault();
  api('/api/settings', readForm())
    .then((result) => {
      fillForm(result.settings);
      say('Applied: the next tap or QR code uses these settings.');
    })
    .catch((e) => fail(e.message));
});

if (token === '') fail('No token in the address: open the URL the demo printed.');
api('/api/state')
  .then((state) => {
    fillForm(state.settings);
    show(state);
  })
  .catch((e) => fail(e.message))
  .finally(() => setTimeout(poll, POLL_MS));
