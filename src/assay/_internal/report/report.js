'use strict';
// The report's only script (allowed by its hash in the page's Content-Security-Policy).
// Every string from a verdict or diagnostics is put into the page with textContent, never
// as markup: nothing a candidate printed can become an element, attribute or script.
(function () {
  const t0 = performance.now();
  const data = JSON.parse(document.getElementById('assay-data').textContent);
  const tParse = performance.now() - t0;
  const root = document.getElementById('app');
  const html = document.documentElement;
  html.dataset.parseMs = tParse.toFixed(1);
  const PAGE = 200;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent, ...kids) { for (const k of kids) if (k) parent.appendChild(k); return parent; }
  function row(cells, cls) {
    const tr = el('tr', cls);
    for (const c of cells) {
      const td = el('td', c && c.cls ? c.cls : '');
      if (c && c.node) td.appendChild(c.node); else td.textContent = c && c.text !== undefined ? String(c.text) : String(c);
      tr.appendChild(td);
    }
    return tr;
  }
  function head(names) { const tr = el('tr'); for (const n of names) tr.appendChild(el('th', '', n)); return add(el('thead'), tr); }
  function params() { return new URLSearchParams(location.hash.slice(1)); }
  function go(p) { location.hash = p.toString(); }
  function explain(code) { return data.explain[code] || ''; }
  const STATUS_TEXT = { 'passed': 'PASSED', 'failed': 'FAILED', 'no-verdict': 'NO VERDICT' };
  // Pseudo-statuses of the status filter: a grading that shows tampering, an impossible twin.
  const FILTER_TEXT = { 'tampered': 'shows tampering', 'twin': 'impossible twin' };
  // n of d as the CLI and the JUnit export print it (rates.percent), '-' with nothing to count.
  function share(n, d) { return d ? n + '/' + d + ' (' + (100 * n / d).toFixed(1) + '%)' : '-'; }
  const SIG_TEXT = {
    'verified': 'signature verified with the given key',
    'unchecked': 'signature NOT checked (no --key given)',
    'invalid': 'signature or envelope INVALID: this verdict cannot be trusted',
    'none': 'no verdict file',
  };

  // -- batch summary ------------------------------------------------------------------------
  function summary(p) {
    const recs = data.records;
    const counts = { 'passed': 0, 'failed': 0, 'no-verdict': 0 };
    const reasons = new Set(), tasks = new Set();
    for (const r of recs) {
      counts[r.st]++;
      if (r.task) tasks.add(r.task);
      for (const c of r.reasons || []) reasons.add(c);
    }
    const cards = el('div', 'cards');
    add(cards, card('total', recs.length, ''));
    for (const k of ['passed', 'failed', 'no-verdict']) add(cards, card(STATUS_TEXT[k].toLowerCase(), counts[k], k));
    const run = data.rates.run;
    add(cards, rateCard('pass rate', run.passed, run.verdicts - run.twins, 'passed', 'rate-pass'),
      rateCard('tamper rate', run.tampered, run.verdicts, run.tampered ? 'tamper' : '', 'rate-tamper'),
      rateCard('twins passed', run.twinsPassed, run.twins, run.twinsPassed ? 'tamper' : '', 'rate-twin'));
    const f = el('div', 'filters');
    const q = el('input'); q.type = 'search'; q.placeholder = 'search submission id'; q.id = 'f-q'; q.value = p.get('q') || '';
    const st = select('f-st', ['', 'passed', 'failed', 'no-verdict', 'tampered', 'twin'], p.get('st') || '', 'any status', FILTER_TEXT);
    const rs = select('f-reason', [''].concat([...reasons].sort()), p.get('reason') || '', 'any reason');
    const ts = select('f-task', [''].concat([...tasks].sort()), p.get('task') || '', 'any task');
    add(f, el('label', '', 'Filter: '), st, rs, ts, q);
    const apply = () => {
      const n = new URLSearchParams();
      if (q.value) n.set('q', q.value);
      if (st.value) n.set('st', st.value);
      if (rs.value) n.set('reason', rs.value);
      if (ts.value) n.set('task', ts.value);
      go(n);
    };
    for (const s of [st, rs, ts]) s.addEventListener('change', apply);
    q.addEventListener('keydown', (e) => { if (e.key === 'Enter') apply(); });
    q.addEventListener('change', apply);

    const tf = performance.now();
    const needle = (p.get('q') || '').toLowerCase();
    const want = { st: p.get('st'), reason: p.get('reason'), task: p.get('task') };
    const hits = [];
    for (let i = 0; i < recs.length; i++) {
      const r = recs[i];
      if (want.st === 'tampered') { if (!(r.tamper || []).length) continue; }
      else if (want.st === 'twin') { if (!r.twin) continue; }
      else if (want.st && r.st !== want.st) continue;
      if (want.task && r.task !== want.task) continue;
      if (want.reason && !(r.reasons || []).includes(want.reason)) continue;
      if (needle && !r.id.toLowerCase().includes(needle)) continue;
      hits.push(i);
    }
    html.dataset.filterMs = (performance.now() - tf).toFixed(1);
    html.dataset.matches = String(hits.length);
    const table = add(el('table', 'gradings'), head(['submission', 'task', 'tier', 'verdict', 'score', 'cases', 'reasons', 'tamper']));
    const body = add(table, el('tbody'));
    let shown = 0;
    const more = el('button', 'more');
    const showMore = () => {
      const end = Math.min(hits.length, shown + PAGE);
      for (; shown < end; shown++) {
        const i = hits[shown], r = recs[i];
        const tr = row([
          { text: r.id, cls: 'id' }, r.task || '', r.tier || '',
          { text: STATUS_TEXT[r.st] + (r.twin ? ' (twin)' : ''), cls: 'st-' + r.st },
          r.score === undefined ? '' : r.score.toFixed(3),
          r.nCases === undefined ? '' : r.nPass + '/' + r.nCases,
          (r.reasons || []).join(', ') || (r.detail || ''),
          { text: (r.tamper || []).join(', '), cls: 'mono tamper' },
        ], 'row');
        tr.dataset.index = String(i);
        tr.addEventListener('click', () => { const n = new URLSearchParams(); n.set('g', String(i)); go(n); });
        body.appendChild(tr);
      }
      more.textContent = 'show ' + Math.min(PAGE, hits.length - shown) + ' more of ' + (hits.length - shown);
      more.hidden = shown >= hits.length;
    };
    more.addEventListener('click', showMore);
    showMore();
    const main = el('main');
    add(main, cards, cheatRates(), f, el('p', '', hits.length + ' of ' + recs.length + ' gradings'), table, more);
    return main;
  }
  function card(label, n, cls) { return add(el('div', 'card ' + cls), el('div', 'n', n), el('div', '', label)); }
  function rateCard(label, n, d, cls, id) {
    const c = add(el('div', 'card ' + cls), el('div', 'n', d ? (100 * n / d).toFixed(1) + '%' : '-'), el('div', '', label), el('div', 'of', d ? n + ' of ' + d : 'nothing to count'));
    c.id = id;
    return c;
  }
  function select(id, values, current, blank, names) {
    const s = el('select'); s.id = id;
    for (const v of values) { const o = el('option', '', (names && names[v]) || v || blank); o.value = v; if (v === current) o.selected = true; s.appendChild(o); }
    return s;
  }
  // Each family's codes with the verdicts that have them, one line per family (tamper first).
  function familyLines(rates) {
    const box = el('div');
    const order = ['tamper', 'unknown', 'grader', 'limit', 'honest'];
    for (const fam of order) {
      if (!rates.families[fam]) continue;
      const codes = Object.entries(rates.reasons[fam]).map(([c, n]) => c + ' ' + n).join(', ');
      add(box, el('div', 'fam fam-' + fam, fam + ' ' + rates.families[fam] + ': ' + codes));
    }
    return box;
  }
  // -- cheat rates: per task, then the run (rates.py computes them; this only shows them) ---
  function cheatRates() {
    const sec = add(el('section', 'rates'), el('h2', '', 'Cheat rates'));
    const t = add(el('table', 'rates'), head(['task', 'verdicts', 'pass rate', 'tamper rate', 'impossible twins passed', 'reasons by family (verdicts)']));
    const body = add(t, el('tbody'));
    const line = (name, r, cls) => {
      const tr = row([{ text: name, cls: 'mono' }, r.verdicts, share(r.passed, r.verdicts - r.twins),
        { text: share(r.tampered, r.verdicts), cls: r.tampered ? 'bad' : '' },
        { text: share(r.twinsPassed, r.twins), cls: r.twinsPassed ? 'bad' : '' },
        { node: familyLines(r) }], cls);
      body.appendChild(tr);
      return tr;
    };
    const tasks = data.rates.tasks;
    let shown = 0;
    const more = el('button', 'more');
    const total = line('(run)', data.rates.run, 'run-total');
    const showMore = () => {
      const end = Math.min(tasks.length, shown + PAGE);
      for (; shown < end; shown++) {
        const r = tasks[shown];
        const tr = line(r.task, r, 'task-rates');
        body.insertBefore(tr, total);
        tr.addEventListener('click', () => { const n = new URLSearchParams(); n.set('task', r.task); go(n); });
      }
      more.textContent = 'show ' + Math.min(PAGE, tasks.length - shown) + ' more of ' + (tasks.length - shown) + ' tasks';
      more.hidden = shown >= tasks.length;
    };
    more.addEventListener('click', showMore);
    showMore();
    add(sec, t, more);
    if (data.rates.run.legacy) add(sec, el('p', 'warn', data.rates.run.legacy + ' verdict(s) signed before the tamper field: read from their reason codes'));
    return sec;
  }

  // -- one grading --------------------------------------------------------------------------
  function grading(i) {
    const r = data.records[i];
    const main = el('main');
    const back = el('a', '', '\u2190 all gradings'); back.href = '#';
    add(main, add(el('p'), back));
    if (!r) return add(main, el('p', 'warn', 'no such grading'));
    add(main, el('div', 'banner ' + r.st, STATUS_TEXT[r.st] + '  ' + r.id));
    const facts = add(el('table', 'facts'), el('tbody'));
    const fact = (k, v, cls) => facts.firstChild.appendChild(row([{ text: k }, { text: v, cls: cls || '' }]));
    fact('signature', SIG_TEXT[r.sig], r.sig === 'verified' ? 'ok' : (r.sig === 'unchecked' ? 'warn' : 'bad'));
    if (r.detail) fact('detail', r.detail, 'mono');
    if (r.task !== undefined) {
      fact('task', r.task); fact('tier', r.tier + ' (' + r.tierTitle + ')'); fact('runtime', r.runtime);
      fact('score', r.score.toFixed(3) + '  (' + r.nPass + ' of ' + r.nCases + ' cases passed)');
      fact('tamper', r.tamper.length ? r.tamper.join(', ') : 'none', r.tamper.length ? 'bad mono' : 'mono');
      if (r.twin) fact('impossible twin', 'yes: no honest solution passes this task; a pass is proof of cheating', 'warn');
      if (r.legacy) fact('signed', 'before the tamper field existed: its reason codes are read with this report\'s table', 'warn');
      fact('grading id', r.gid, 'mono'); fact('started', r.started, 'mono'); fact('ended', r.ended, 'mono');
    }
    add(main, add(el('section'), el('h2', '', 'Verdict'), facts));
    if (r.task === undefined) return main;

    const rs = add(el('section'), el('h2', '', 'Reason codes'));
    if (!r.reasons.length) rs.appendChild(el('p', '', 'none'));
    else {
      const t = add(el('table'), head(['code', 'family', 'what it means']), el('tbody'));
      for (const c of r.reasons) t.lastChild.appendChild(row([{ text: c, cls: 'mono' }, { text: r.fam[c] || 'unknown', cls: 'fam-' + (r.fam[c] || 'unknown') }, explain(c)]));
      rs.appendChild(t);
    }
    add(main, rs);
    if ((r.notes || []).length) {
      const t = add(el('table'), head(['note', 'what it means']), el('tbody'));
      for (const c of r.notes) t.lastChild.appendChild(row([{ text: c, cls: 'mono' }, explain(c)]));
      add(main, add(el('section'), el('h2', '', 'Notes (informational, never a reason to fail)'), t));
    }
    const ev = add(el('section'), el('h2', '', 'Limit and firewall events'));
    if (!r.events.length) ev.appendChild(el('p', '', 'none'));
    for (const c of r.events) ev.appendChild(el('p', 'mono', c + ' \u2014 ' + explain(c)));
    add(main, ev);

    const byCase = {};
    for (const d of r.diag || []) byCase[d.id] = d;
    const cs = add(el('section'), el('h2', '', 'Cases'));
    const ct = add(el('table'), head(['case', 'status', 'seconds']), el('tbody'));
    for (const [id, status, dur] of r.cases) ct.lastChild.appendChild(row([{ text: id, cls: 'mono' }, { text: status, cls: 'st-' + status }, dur.toFixed(3)]));
    cs.appendChild(ct);
    for (const d of r.diag || []) {
      const box = add(el('div', 'diag'), el('h3', 'mono', 'case ' + d.id + ': ' + d.reason));
      if (d.diff) add(box, el('div', '', 'diff (expected \u2192 actual)'), el('pre', 'diff', d.diff));
      add(box, el('div', '', 'expected'), el('pre', 'expected', d.expected), el('div', '', 'actual'), el('pre', 'actual', d.actual));
      cs.appendChild(box);
    }
    if (!(r.diag || []).length && r.st === 'failed') cs.appendChild(el('p', '', 'no diagnostics recorded for this grading'));
    add(main, cs);

    const tl = add(el('section'), el('h2', '', 'Phase timeline'));
    const max = Math.max(0.001, ...r.timings.map((x) => x[1]));
    for (const [phase, s] of r.timings) {
      const bar = el('div', 'bar'); bar.style.width = (300 * s / max).toFixed(1) + 'px';
      tl.appendChild(add(el('div', 'bar-row'), el('span', 'bar-label', phase), bar, el('span', 'bar-val', s.toFixed(3) + ' s')));
    }
    if (!r.timings.length) tl.appendChild(el('p', '', 'no timings'));
    add(main, tl);
    const dg = add(el('section'), el('h2', '', 'Digests'));
    const dt = add(el('table'), el('tbody'));
    for (const [k, v] of Object.entries(r.digests)) dt.firstChild.appendChild(row([k, { text: v, cls: 'mono' }]));
    add(main, add(dg, dt));
    return main;
  }

  // -- the proof matrix ---------------------------------------------------------------------
  function matrix() {
    const main = el('main');
    const t = add(el('table', 'matrix'), head(['attack', 'class'].concat(data.tierNames)), el('tbody'));
    let unexpected = 0;
    for (const r of data.rows) {
      const tr = row([{ text: r.attack, cls: 'mono' }, r.cls]);
      for (const tier of data.tiers) {
        const c = r.cells[tier];
        const td = el('td', c ? 'cell-' + c.observed + (c.match ? '' : ' cell-unexpected') : '', c ? c.observed + (c.match ? '' : ' (expected ' + c.expected + ')') : '-');
        if (c && c.reason) add(td, el('div', 'mono', c.reason));
        if (c && !c.match) unexpected++;
        tr.appendChild(td);
      }
      t.lastChild.appendChild(tr);
    }
    add(main, el('p', unexpected ? 'bad' : 'ok', unexpected ? unexpected + ' unexpected outcome(s)' : 'every outcome was the expected one'), t);
    return main;
  }

  function render() {
    const tr = performance.now();
    const p = params();
    let view;
    if (data.kind === 'matrix') view = matrix();
    else if (p.has('g')) view = grading(Number(p.get('g')));
    else view = summary(p);
    root.replaceChildren(view);
    html.dataset.renderMs = (performance.now() - tr).toFixed(1);
    html.dataset.rendered = data.kind + (p.has('g') ? ':grading' : ':summary');
  }
  document.getElementById('title').textContent = data.title;
  document.getElementById('subtitle').textContent = data.subtitle;
  window.addEventListener('hashchange', render);
  render();
})();
