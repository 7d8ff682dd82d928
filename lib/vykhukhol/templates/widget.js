/* Vykhukhol's form helper (docs/using/subscriber-pages.md#subscriber-challenge).
   Our own, served by cgi/subscribe.py?part=widget.js: no third party.
   On the first sign of a person (a key, a touch, the mouse, a scroll) it asks
   subscribe.py?part=start for a form stamp and, when the site has the puzzle on,
   an ALTCHA puzzle; it finds the number whose SHA-256 matches and puts both in
   the form's hidden fields ("ts", "altcha"). A post sent before that is held
   until it is done. Without this script a form still posts: the site judges it
   by its other defences. */
(function () {
  "use strict";
  var script = document.currentScript;
  var start = script ? script.src.replace(/part=widget\.js/, "part=start") : "subscribe.py?part=start";
  var MIN_WAIT = 2500; /* ms: the site takes a faster post for a bot's */

  var K = [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2];

  /* SHA-256 of an ASCII string, in hex (the puzzle's salt and number are ASCII). */
  function sha256(text) {
    var bytes = [], i, j;
    for (i = 0; i < text.length; i++) bytes.push(text.charCodeAt(i) & 0xff);
    var bits = bytes.length * 8;
    bytes.push(0x80);
    while (bytes.length % 64 !== 56) bytes.push(0);
    for (i = 7; i >= 0; i--) bytes.push(i > 3 ? 0 : (bits >>> (i * 8)) & 0xff);
    var h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c,
      0x1f83d9ab, 0x5be0cd19];
    var w = new Array(64);
    for (i = 0; i < bytes.length; i += 64) {
      for (j = 0; j < 16; j++) {
        w[j] = (bytes[i + 4 * j] << 24) | (bytes[i + 4 * j + 1] << 16) |
          (bytes[i + 4 * j + 2] << 8) | bytes[i + 4 * j + 3];
      }
      for (j = 16; j < 64; j++) {
        var a0 = w[j - 15], a1 = w[j - 2];
        var s0 = ((a0 >>> 7) | (a0 << 25)) ^ ((a0 >>> 18) | (a0 << 14)) ^ (a0 >>> 3);
        var s1 = ((a1 >>> 17) | (a1 << 15)) ^ ((a1 >>> 19) | (a1 << 13)) ^ (a1 >>> 10);
        w[j] = (w[j - 16] + s0 + w[j - 7] + s1) | 0;
      }
      var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
      for (j = 0; j < 64; j++) {
        var S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        var t1 = (k + S1 + ((e & f) ^ (~e & g)) + K[j] + w[j]) | 0;
        var S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        var t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        k = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      h[0] = (h[0] + a) | 0; h[1] = (h[1] + b) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + d) | 0;
      h[4] = (h[4] + e) | 0; h[5] = (h[5] + f) | 0; h[6] = (h[6] + g) | 0; h[7] = (h[7] + k) | 0;
    }
    var out = "";
    for (i = 0; i < 8; i++) out += ("00000000" + (h[i] >>> 0).toString(16)).slice(-8);
    return out;
  }

  /* The number that solves the puzzle, tried in slices so the page stays responsive. */
  function solve(puzzle, done) {
    var n = 0;
    (function slice() {
      var end = Math.min(n + 5000, puzzle.maxNumber);
      for (; n <= end; n++) {
        if (sha256(puzzle.salt + n) === puzzle.challenge) { done(n); return; }
      }
      if (n > puzzle.maxNumber) { done(null); return; }
      setTimeout(slice, 0);
    })();
  }

  var forms = [], state = "idle", ready = [], began = 0;

  function fill(name, value) {
    forms.forEach(function (form) {
      var field = form.querySelector('input[name="' + name + '"]');
      if (field && (name !== "ts" || !field.value)) field.value = value;
    });
  }

  function finish() {
    state = "done";
    ready.splice(0).forEach(function (go) { go(); });
  }

  function begin() {
    if (state !== "idle") return;
    state = "working";
    began = Date.now();
    var ask = new XMLHttpRequest();
    ask.open("GET", start);
    ask.onload = function () {
      var answer;
      try { answer = JSON.parse(ask.responseText); } catch (e) { finish(); return; }
      if (answer.stamp) fill("ts", answer.stamp);
      if (!answer.challenge) { finish(); return; }
      var puzzle = answer.challenge;
      solve(puzzle, function (number) {
        if (number !== null) {
          fill("altcha", btoa(JSON.stringify({algorithm: puzzle.algorithm,
            challenge: puzzle.challenge, number: number, salt: puzzle.salt,
            signature: puzzle.signature})));
        }
        finish();
      });
    };
    ask.onerror = finish;
    ask.send();
  }

  function submitted(event) {
    var form = event.target;
    var wait = MIN_WAIT - (Date.now() - began);
    if (state === "done" && wait <= 0) return;
    event.preventDefault();
    begin();
    var button = form.querySelector('[type="submit"]');
    if (button) button.disabled = true;
    var go = function () { setTimeout(function () { form.submit(); },
      Math.max(0, MIN_WAIT - (Date.now() - began))); };
    if (state === "done") go(); else ready.push(go);
  }

  function watch() {
    var found = document.querySelectorAll("form");
    for (var i = 0; i < found.length; i++) {
      if (found[i].querySelector('input[name="ts"]')) {
        forms.push(found[i]);
        found[i].addEventListener("submit", submitted);
      }
    }
    ["keydown", "pointerdown", "mousemove", "touchstart", "scroll", "focusin"].forEach(
      function (name) { window.addEventListener(name, begin, {once: true, passive: true}); });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
})();
