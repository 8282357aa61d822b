// Passkeys: the navigator.credentials calls that signing in with a passkey,
// adding one and verifying with one need (the only part of ctalk's pages
// that needs JavaScript). The server begins and finishes each ceremony;
// this moves its options to the browser and the authenticator's answer
// back, in base64url as the server writes them.
"use strict";
(function () {
  if (!window.PublicKeyCredential || !navigator.credentials) { return; }

  function bytes(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) { s += "="; }
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { out[i] = bin.charCodeAt(i); }
    return out.buffer;
  }
  function text(buf) {
    if (!buf) { return undefined; }
    var b = new Uint8Array(buf), s = "";
    for (var i = 0; i < b.length; i++) { s += String.fromCharCode(b[i]); }
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function descriptors(list) {
    return (list || []).map(function (d) { return Object.assign({}, d, { id: bytes(d.id) }); });
  }
  function creationOptions(o) {
    var pk = Object.assign({}, o.publicKey);
    pk.challenge = bytes(pk.challenge);
    pk.user = Object.assign({}, pk.user, { id: bytes(pk.user.id) });
    pk.excludeCredentials = descriptors(pk.excludeCredentials);
    return pk;
  }
  function requestOptions(o) {
    var pk = Object.assign({}, o.publicKey);
    pk.challenge = bytes(pk.challenge);
    pk.allowCredentials = descriptors(pk.allowCredentials);
    return pk;
  }
  function answer(cred) {
    var r = cred.response, out = {
      id: cred.id, rawId: text(cred.rawId), type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {},
      response: { clientDataJSON: text(r.clientDataJSON) }
    };
    if (r.attestationObject) {
      out.response.attestationObject = text(r.attestationObject);
      out.response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      out.response.authenticatorData = text(r.authenticatorData);
      out.response.signature = text(r.signature);
      out.response.userHandle = text(r.userHandle);
    }
    return out;
  }

  function call(el, path, body) {
    return fetch(path, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": el.getAttribute("data-csrf") },
      body: JSON.stringify(body || {})
    }).then(function (resp) {
      return resp.json().then(function (v) {
        if (!resp.ok) { throw new Error(v.error || "The passkey request failed; try again."); }
        return v;
      });
    });
  }
  function say(el, err) {
    var p = el.querySelector("[data-passkey-error]");
    var msg = err && err.name === "NotAllowedError" ? "The passkey request was cancelled or timed out. Try again." :
      err && err.name === "InvalidStateError" ? "This device already holds a passkey of yours for this site." :
      (err && err.message) || "The passkey request failed; try again.";
    if (p) { p.textContent = msg; p.hidden = false; }
  }

  // Each kind: its ceremony's calls and what follows a success.
  var kinds = {
    signin: { begin: "/passkeys/signin/begin", finish: "/passkeys/signin/finish", get: true },
    verify: { begin: "/passkeys/verify/begin", finish: "/passkeys/verify/finish", get: true },
    register: { begin: "/passkeys/register/begin", finish: "/passkeys/register/finish", get: false }
  };
  var pending = null;

  function run(el, mediation) {
    var kind = kinds[el.getAttribute("data-passkey")], ceremony;
    if (pending) { pending.abort(); }
    var abort = pending = new AbortController();
    return call(el, kind.begin).then(function (c) {
      ceremony = c.ceremony;
      if (!kind.get) { return navigator.credentials.create({ publicKey: creationOptions(c.options), signal: abort.signal }); }
      var req = { publicKey: requestOptions(c.options), signal: abort.signal };
      if (mediation) { req.mediation = mediation; }
      return navigator.credentials.get(req);
    }).then(function (cred) {
      var name = el.querySelector("input[name=passkey_name]");
      return call(el, kind.finish, { ceremony: ceremony, credential: answer(cred), next: el.getAttribute("data-next") || "", name: name ? name.value : "" });
    }).then(function (v) {
      var replay = el.getAttribute("data-replay");
      if (replay && document.getElementById(replay)) { document.getElementById(replay).submit(); return; }
      location.assign(v.next || "/inbox");
    }).catch(function (err) {
      // The autofill's request fails quietly: the button is still there.
      if ((err && err.name === "AbortError") || mediation) { return; }
      say(el, err);
    });
  }

  // A decision form that asks for a passkey first (data-passkey-verify)
  // verifies on its own page when it is sent, then sends itself; the
  // server refuses it without the verification, and without this script
  // it goes to the step-up page, which does the same in two steps.
  function verifyThenSend(form) {
    var ceremony;
    if (pending) { pending.abort(); }
    var abort = pending = new AbortController();
    return call(form, kinds.verify.begin).then(function (c) {
      ceremony = c.ceremony;
      return navigator.credentials.get({ publicKey: requestOptions(c.options), signal: abort.signal });
    }).then(function (cred) {
      return call(form, kinds.verify.finish, { ceremony: ceremony, credential: answer(cred), next: "" });
    }).then(function () {
      form.submit();
    }).catch(function (err) {
      if (!(err && err.name === "AbortError")) { say(form, err); }
    });
  }
  document.querySelectorAll("form[data-passkey-verify]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      verifyThenSend(form);
    });
  });

  document.querySelectorAll("[data-passkey]").forEach(function (el) {
    el.hidden = false;
    var button = el.querySelector("[data-passkey-start]");
    if (button) { button.addEventListener("click", function () { run(el); }); }
    // Where the browser offers it, its autofill lists the passkeys of the
    // site under the user id field as soon as the sign-in page opens.
    if (el.getAttribute("data-passkey") === "signin" && PublicKeyCredential.isConditionalMediationAvailable) {
      PublicKeyCredential.isConditionalMediationAvailable().then(function (ok) { if (ok) { run(el, "conditional"); } });
    }
  });
})();
