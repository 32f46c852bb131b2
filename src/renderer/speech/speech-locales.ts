/**
 * What the kiosk says aloud, in English, Spanish and French. Written for the ear, not copied from the
 * screen: short sentences (the system voice stalls on long ones, and a listener cannot skim back), the
 * action first, and where the reader is. The words follow the screen's own copy (i18n/common-*.ts) where
 * they fit, so a companion reading along hears what they see. An answer is one sentence ("Age check: 21 or
 * older — accepted"): the verdict is in the first piece the voice makes, so it is heard first. `{{…}}` placeholders are filled by
 * utterances.ts; none of them ever carries a holder's value except `{{details}}` of a private (headset) answer.
 */

/** The same keys as English, every leaf a string (a missing translation fails the type check). */
type Translation<T> = { readonly [K in keyof T]: T[K] extends string ? string : Translation<T[K]> };

const en = {
  keys: 'Press 5 to repeat, 0 to pause, plus and minus for volume, star for language.',
  ready: {
    tap: 'Open your ID wallet, then hold your phone on the reader.',
    qr: 'Open your ID wallet, then show its QR code to the camera.',
    qrScanner: 'Open your ID wallet, then show its QR code to the scanner.',
    orQr: 'Or show its QR code to the camera.',
    readerAt: {
      left: 'The reader is left of the screen.',
      right: 'The reader is right of the screen.',
      below: 'The reader is below the screen.',
    },
  },
  starting: 'The kiosk is starting. Please wait.',
  connecting: 'Getting ready. One moment, please.',
  disconnected: 'Connecting to the kiosk. Please wait.',
  waiting: 'One moment. The screen is getting ready.',
  progress: {
    nfc_reading: 'Hold your phone still on the reader.',
    qr_read: 'QR code read. Keep your phone near.',
    engaging: 'Hold your phone still.',
    tap_again: 'Tap your phone on the reader again.',
    ble_connecting: 'Connecting to your phone. Keep it near.',
    approve_on_phone: 'Approve on your phone. Check the request and accept it.',
    receiving: 'Receiving. Keep your phone near.',
  },
  remove: { done: 'Thank you. Please take your phone.', retry: 'Lift your phone from the reader, then tap it again.' },
  offline: {
    unavailable: 'This kiosk is temporarily unavailable. Please wait, or ask staff.',
    notAnswering: 'The verification service is not answering. Please wait, or ask staff.',
  },
  needsStaff: 'This kiosk needs a member of staff. Please ask staff for help.',
  stopped: 'This kiosk is closed. Please ask staff for help.',
  error: {
    title: 'That did not work.',
    again: 'Press 5 to hear this again. If it happens again, ask staff.',
    askStaff: 'Please ask staff for help.',
  },
  outcome: {
    ageAccepted: 'Age check: {{age}} or older — accepted.',
    ageNotAccepted: 'Age check: not {{age}} or older — not accepted.',
    accepted: 'ID check: accepted.',
    notAccepted: 'ID check: not accepted. Please see a member of staff.',
    requiredMissing: 'ID check: not accepted. Required details were not shared.',
    declined: 'You declined to share. Nothing was shared from your phone.',
    notVerified: 'Your ID could not be verified. Please ask staff.',
    details: 'For your ears only: {{details}}.',
  },
  badge: 'Speech on · volume {{volume}} %',
  badgePrivate: 'Speech on, headset · volume {{volume}} %',
};

const es: Translation<typeof en> = {
  keys: 'Pulse 5 para repetir, 0 para pausar, más y menos para el volumen, asterisco para el idioma.',
  ready: {
    tap: 'Abra su cartera de identidad y acerque el teléfono al lector.',
    qr: 'Abra su cartera de identidad y muestre su código QR a la cámara.',
    qrScanner: 'Abra su cartera de identidad y muestre su código QR al escáner.',
    orQr: 'O muestre su código QR a la cámara.',
    readerAt: {
      left: 'El lector está a la izquierda de la pantalla.',
      right: 'El lector está a la derecha de la pantalla.',
      below: 'El lector está debajo de la pantalla.',
    },
  },
  starting: 'El quiosco se está iniciando. Espere, por favor.',
  connecting: 'Preparando. Un momento, por favor.',
  disconnected: 'Conectando con el quiosco. Espere, por favor.',
  waiting: 'Un momento. La pantalla se está preparando.',
  progress: {
    nfc_reading: 'Mantenga el teléfono quieto sobre el lector.',
    qr_read: 'Código QR leído. Mantenga el teléfono cerca.',
    engaging: 'Mantenga el teléfono quieto.',
    tap_again: 'Acerque otra vez el teléfono al lector.',
    ble_connecting: 'Conectando con su teléfono. Manténgalo cerca.',
    approve_on_phone: 'Apruebe en su teléfono. Revise la solicitud y acéptela.',
    receiving: 'Recibiendo. Mantenga el teléfono cerca.',
  },
  remove: { done: 'Gracias. Puede retirar su teléfono.', retry: 'Retire el teléfono del lector y vuelva a acercarlo.' },
  offline: {
    unavailable: 'Este quiosco no está disponible por el momento. Espere o pida ayuda al personal.',
    notAnswering: 'El servicio de verificación no responde. Espere o pida ayuda al personal.',
  },
  needsStaff: 'Este quiosco necesita a un empleado. Pida ayuda al personal.',
  stopped: 'Este quiosco está cerrado. Pida ayuda al personal.',
  error: {
    title: 'No ha funcionado.',
    again: 'Pulse 5 para oírlo otra vez. Si vuelve a ocurrir, pida ayuda al personal.',
    askStaff: 'Pida ayuda al personal.',
  },
  outcome: {
    ageAccepted: 'Control de edad: {{age}} años o más — aceptado.',
    ageNotAccepted: 'Control de edad: no tiene {{age}} años o más — no aceptado.',
    accepted: 'Control de identidad: aceptado.',
    notAccepted: 'Control de identidad: no aceptado. Diríjase a un empleado.',
    requiredMissing: 'Control de identidad: no aceptado. No se compartieron datos obligatorios.',
    declined: 'Ha decidido no compartir. No se compartió nada desde su teléfono.',
    notVerified: 'No se pudo verificar su identidad. Pida ayuda al personal.',
    details: 'Solo para sus oídos: {{details}}.',
  },
  badge: 'Voz activada · volumen {{volume}} %',
  badgePrivate: 'Voz activada, auriculares · volumen {{volume}} %',
};

const fr: Translation<typeof en> = {
  keys: 'Appuyez sur 5 pour répéter, 0 pour mettre en pause, plus et moins pour le volume, étoile pour la langue.',
  ready: {
    tap: 'Ouvrez votre portefeuille d’identité, puis posez votre téléphone sur le lecteur.',
    qr: 'Ouvrez votre portefeuille d’identité, puis montrez son code QR à la caméra.',
    qrScanner: 'Ouvrez votre portefeuille d’identité, puis montrez son code QR au scanner.',
    orQr: 'Ou montrez son code QR à la caméra.',
    readerAt: {
      left: 'Le lecteur est à gauche de l’écran.',
      right: 'Le lecteur est à droite de l’écran.',
      below: 'Le lecteur est sous l’écran.',
    },
  },
  starting: 'La borne démarre. Veuillez patienter.',
  connecting: 'Préparation. Un instant, s’il vous plaît.',
  disconnected: 'Connexion à la borne. Veuillez patienter.',
  waiting: 'Un instant. L’écran se prépare.',
  progress: {
    nfc_reading: 'Gardez votre téléphone immobile sur le lecteur.',
    qr_read: 'Code QR lu. Gardez votre téléphone à proximité.',
    engaging: 'Gardez votre téléphone immobile.',
    tap_again: 'Posez de nouveau votre téléphone sur le lecteur.',
    ble_connecting: 'Connexion à votre téléphone. Gardez-le à proximité.',
    approve_on_phone: 'Acceptez sur votre téléphone. Vérifiez la demande, puis acceptez-la.',
    receiving: 'Réception. Gardez votre téléphone à proximité.',
  },
  remove: { done: 'Merci. Vous pouvez reprendre votre téléphone.', retry: 'Retirez votre téléphone du lecteur, puis posez-le de nouveau.' },
  offline: {
    unavailable: 'Cette borne est momentanément indisponible. Patientez ou demandez au personnel.',
    notAnswering: 'Le service de vérification ne répond pas. Patientez ou demandez au personnel.',
  },
  needsStaff: 'Cette borne a besoin d’un membre du personnel. Demandez de l’aide au personnel.',
  stopped: 'Cette borne est fermée. Demandez de l’aide au personnel.',
  error: {
    title: 'Cela n’a pas fonctionné.',
    again: 'Appuyez sur 5 pour réécouter. Si cela se reproduit, demandez au personnel.',
    askStaff: 'Demandez de l’aide au personnel.',
  },
  outcome: {
    ageAccepted: 'Contrôle d’âge : {{age}} ans ou plus — accepté.',
    ageNotAccepted: 'Contrôle d’âge : pas {{age}} ans ou plus — refusé.',
    accepted: 'Contrôle d’identité : accepté.',
    notAccepted: 'Contrôle d’identité : refusé. Adressez-vous à un membre du personnel.',
    requiredMissing: 'Contrôle d’identité : refusé. Des informations requises n’ont pas été partagées.',
    declined: 'Vous avez refusé de partager. Rien n’a été partagé depuis votre téléphone.',
    notVerified: 'Votre pièce d’identité n’a pas pu être vérifiée. Demandez au personnel.',
    details: 'Pour vous seul : {{details}}.',
  },
  badge: 'Voix activée · volume {{volume}} %',
  badgePrivate: 'Voix activée, casque · volume {{volume}} %',
};

export const speechStrings = { en, es, fr } as const;
export type SpeechStrings = typeof en;
