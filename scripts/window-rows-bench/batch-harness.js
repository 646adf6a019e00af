// The harness batch.py adds to the saved Live dials page (see its docstring): changes the page
// every Nth frame as a batch of live dials does and reports each frame's work in the title.
(function(){
const q = new URLSearchParams(location.search);
const v = new Set((q.get('v')||'').split(',').filter(Boolean));
const every = +(q.get('every')||12), batches = +(q.get('batches')||40);
const vp = document.querySelector('.viewport'), sp = document.querySelector('.spacer'), rows = document.querySelector('.rows');
vp.style.setProperty('--row-h','28px');
if (v.has('noradius')) document.querySelector('.grid-wrap').style.borderRadius = '0';
if (v.has('noclip')) document.querySelector('.grid-wrap').style.overflow = 'visible';
if (v.has('notext')) { const st=document.createElement('style'); st.textContent='.rows .row, .rows .row * { color: transparent !important; }'; document.head.appendChild(st); }
if (v.has('noborder')) { const st=document.createElement('style'); st.textContent='.rows .row { border-bottom: 0 !important; }'; document.head.appendChild(st); }
if (v.has('sans')) { const st=document.createElement('style'); st.textContent='.rows .row, .rows .row * { font-family: sans-serif !important; font-variant-numeric: normal !important; }'; document.head.appendChild(st); }
if (v.has('nosb')) vp.style.scrollbarWidth = 'none';
if (v.has('hide')) rows.style.visibility = 'hidden';
if (v.has('nowill')) rows.style.willChange = 'auto';
if (v.has('noviewport')) vp.style.overflowY = 'hidden';
if (v.has('nocontain')) vp.style.contain = 'none';
if (v.has('contain')) vp.style.contain = 'strict';
if (v.has('nogridrows')) document.querySelector('.body').style.gridTemplateRows = 'none';
if (v.has('gridrows')) document.querySelector('.body').style.gridTemplateRows = 'minmax(0, 1fr)';
if (v.has('cellcontain')) { const st=document.createElement('style'); st.textContent='.rows .row > * { contain: size layout style; height: 27px; line-height: 27px; }'; document.head.appendChild(st); }
if (v.has('abs')) {
  const geo = [...rows.querySelectorAll('.row')].map(r => [...r.children].map(c => [c.offsetLeft, c.offsetWidth, getComputedStyle(c).display]));
  [...rows.querySelectorAll('.row')].forEach((r, i) => { r.style.display = 'block'; r.style.position = 'relative';
    [...r.children].forEach((c, j) => { const g = geo[i][j]; if (g[2] === 'none') return; Object.assign(c.style, {position: 'absolute', left: g[0] + 'px', width: g[1] + 'px', top: '0', height: '27px', lineHeight: '27px', overflow: 'hidden'}); }); });
}
const count = [...document.querySelectorAll('*')].find(e => e.childNodes.length===1 && /dials match/.test(e.textContent));
const cells = [...rows.querySelectorAll('.row')].map(r => [...r.children].map(c => { let n=c; while (n.firstChild && n.firstChild.nodeType!==3) n=n.firstChild; return n.firstChild; }).filter(Boolean));
let h = parseFloat(sp.style.height)||0, k = 0, b = 0, t0 = 0, kind='';
const res = {batch: [], idle: []};
const ch = new MessageChannel();
ch.port1.onmessage = () => { if (t0) { res[kind].push(performance.now()-t0); t0 = 0; } };
let shift = 0;
const js = +(q.get('js')||0);
function apply() {
  if (js) { const e = performance.now() + js; while (performance.now() < e) {} }
  if (v.has('grow')) { h += 120*28; sp.style.height = h + 'px'; }
  if (v.has('rows')) { shift++; for (let i=0;i<(v.has('one')?1:cells.length);i++) for (let j=0;j<cells[i].length;j++) { const src = cells[(i+shift)%cells.length][j]; cells[i][j].data = cells[i][j].data === src.data ? src.data + ' ' : src.data; } }
  if (v.has('count') && count) count.firstChild.data = (100000+b*120) + ' dials match';
  if (v.has('force')) void rows.offsetHeight; // style and layout now, in the task
}
// 'task': the batch is applied in a task posted from the frame before (after its rendering),
// not in the frame's own callback.
const tch = new MessageChannel();
tch.port1.onmessage = () => apply();
let lastT = 0; const gaps = [];
function frame(t) {
  k++;
  if (k > 31 && lastT) gaps.push(t - lastT);
  lastT = t;
  if (v.has('task') && k > 30 && (k + 1) % every === 0) tch.port2.postMessage(0);
  if (k > 30 && k % every === 0) {
    b++;
    if (!v.has('task')) apply();
    kind = 'batch'; t0 = t; ch.port2.postMessage(0);
  } else if (k > 30) { kind = 'idle'; t0 = t; ch.port2.postMessage(0); }
  if (b < batches) requestAnimationFrame(frame);
  else setTimeout(() => {
    const st = (a) => { a.sort((x,y)=>x-y); return {p50: a[a.length>>1], p90: a[Math.floor(a.length*.9)], max: a[a.length-1], n: a.length}; };
    gaps.sort((x,y)=>x-y); const g = {p50: gaps[gaps.length>>1], p90: gaps[Math.floor(gaps.length*.9)], p99: gaps[Math.floor(gaps.length*.99)], max: gaps[gaps.length-1], over20: gaps.filter(x=>x>20).length, n: gaps.length};
    document.title = 'R ' + JSON.stringify({batch: st(res.batch), idle: st(res.idle), gaps: g, frames: k});
  }, 200);
}
requestAnimationFrame(frame);
})();
