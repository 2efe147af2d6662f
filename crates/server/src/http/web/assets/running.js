// kcoord's web page, the running application on each streams group's graph: polls .../tasks
// and .../lag for every open group section app.js drew, lists the instances (selecting one
// highlights its tasks, and the nodes and stores of the sub-topologies it runs, on the
// drawing), each sub-topology's tasks with their runners and lag (each sub-topology's lag is
// also written on its box in the drawing, and the one that lags most is flagged, there too),
// and, in a "Rebalances" panel, .../timeline.
//
// Data from the server is only ever put into the page as text (textContent), never as HTML.
'use strict';

(() => {
  const POLL_MS = 3000;
  /** groupId -> { box, selected (member id or null), nodes (drawing -> node subtopology) }. */
  const state = new Map();

  const { el, getJson, cssString } = window.kcoordPage;

  const groupPath = (id) => `api/v1/groups/${encodeURIComponent(id)}`;
  const shortId = (id) => (id.length > 12 ? `${id.slice(0, 8)}…` : id);
  const who = (r) => r.instanceId || shortId(r.processId || r.memberId);
  const fmtRate = (r) => (r === null || r === undefined ? '' : `${r > 0 ? '+' : ''}${r.toFixed(1)}/s`);

  /** The group's running-application box, added once to the section app.js made. */
  function entryOf(section) {
    const id = section.dataset.group;
    let entry = state.get(id);
    if (!entry || !entry.box.isConnected) {
      const timeline = el('details', { class: 'timeline' },
        el('summary', {}, 'Rebalances'), el('div', { class: 'holding-up' }), el('div', { class: 'events' }));
      const box = el('div', { class: 'running' },
        el('div', { class: 'instances' }), el('div', { class: 'tasks' }), el('div', { class: 'stores' }), timeline);
      section.querySelector('details > div').append(box);
      entry = { box, timeline, selected: null, nodes: null, drawing: null, tasks: null, lag: null };
      state.set(id, entry);
      timeline.addEventListener('toggle', () => refreshTimeline(section, entry));
    }
    return entry;
  }

  async function refresh(section) {
    const id = section.dataset.group;
    const entry = entryOf(section);
    if (!section.querySelector('details').open) {
      return;
    }
    try {
      const [tasks, lag] = await Promise.all([getJson(`${groupPath(id)}/tasks`), getJson(`${groupPath(id)}/lag`)]);
      entry.tasks = tasks;
      entry.lag = lag;
    } catch (e) {
      entry.box.querySelector('.tasks').replaceChildren(el('p', { class: 'error' }, `Cannot read the tasks: ${e.message}`));
      return;
    }
    await mapNodes(section, entry);
    render(section, entry);
    await refreshTimeline(section, entry);
  }

  /** Node name -> sub-topology id of the drawing on the page, read again when it is redrawn. */
  async function mapNodes(section, entry) {
    const svg = section.querySelector('.drawing svg');
    if (!svg || svg === entry.drawing) {
      return;
    }
    try {
      const doc = await getJson(`${groupPath(section.dataset.group)}/topology`);
      const nodes = new Map();
      for (const s of (doc.topologyDescription || { subtopologies: [] }).subtopologies) {
        for (const n of s.nodes) nodes.set(n.name, String(s.id));
      }
      entry.nodes = nodes;
      entry.drawing = svg;
    } catch (e) {
      entry.nodes = null;
    }
  }

  function render(section, entry) {
    const { tasks, lag } = entry;
    if (entry.selected && !tasks.instances.some((i) => i.memberId === entry.selected)) {
      entry.selected = null;
    }
    const buttons = tasks.instances.map((i) => {
      const button = el('button', { type: 'button', class: 'instance', 'aria-pressed': String(i.memberId === entry.selected), title: `member ${i.memberId}, process ${i.processId}, ${i.clientHost}` },
        `${who(i)} · ${i.activeTasks} active, ${i.standbyTasks} standby${i.warmupTasks ? `, ${i.warmupTasks} warm-up` : ''}`);
      button.dataset.member = i.memberId;
      return button;
    });
    entry.box.querySelector('.instances').replaceChildren(
      el('h3', {}, 'Instances'),
      ...(buttons.length ? buttons : [el('p', { class: 'hint' }, 'No members.')]));
    const lagByTask = new Map();
    for (const p of lag.partitions) {
      const key = `${p.subtopologyId} ${p.partition}`;
      const sum = lagByTask.get(key) || { lag: null, rate: null, detail: [] };
      const known = (v) => (v === null ? '–' : String(v));
      sum.detail.push(`${p.topic}-${p.partition}: committed ${known(p.committedOffset)}, end ${known(p.logEndOffset)}, lag ${known(p.lag)}`);
      if (p.lag !== null) sum.lag = (sum.lag || 0) + p.lag;
      if (p.lagRatePerSecond !== null) sum.rate = (sum.rate || 0) + p.lagRatePerSecond;
      lagByTask.set(key, sum);
    }
    const lagOf = new Map(lag.subtopologies.map((s) => [s.subtopologyId, s]));
    entry.box.querySelector('.tasks').replaceChildren(
      el('p', { class: 'meta' }, `Total lag ${lag.totalLag}`),
      ...tasks.subtopologies.map((s) => subtopologyBlock(s, lagOf.get(s.subtopologyId), lag.worstSubtopologyId, lagByTask)));
    entry.box.querySelector('.stores').replaceChildren(...storesBlock(tasks.stateStores));
    highlight(section, entry);
  }

  function subtopologyBlock(s, lag, worst, lagByTask) {
    const isWorst = worst === s.subtopologyId;
    const runners = (list) => list.map(who).join(', ') || '–';
    const rows = s.tasks.map((t) => {
      const l = lagByTask.get(`${s.subtopologyId} ${t.partition}`) || { lag: null, rate: null, detail: [] };
      const row = el('tr', { class: 'task' },
        el('td', {}, `${s.subtopologyId}_${t.partition}`),
        el('td', {}, t.active ? who(t.active) : 'not running'),
        el('td', {}, runners(t.standbys)), el('td', {}, runners(t.warmups)),
        // Its source partitions, one line each, on hover.
        el('td', { class: 'lag', title: l.detail.join('\n') }, l.lag === null ? '–' : String(l.lag)),
        el('td', { class: 'lag' }, fmtRate(l.rate)));
      row.dataset.subtopology = s.subtopologyId;
      row.dataset.partition = String(t.partition);
      row.dataset.active = t.active ? t.active.memberId : '';
      row.dataset.standbys = t.standbys.map((r) => r.memberId).join(' ');
      row.dataset.warmups = t.warmups.map((r) => r.memberId).join(' ');
      if (!t.active) row.classList.add('unassigned');
      return row;
    });
    const summary = lag ? `lag ${lag.lag}${lag.lagRatePerSecond === null ? '' : ` (${fmtRate(lag.lagRatePerSecond)})`}` : 'lag –';
    const block = el('div', { class: `subtopology-tasks${isWorst ? ' worst' : ''}` },
      el('h3', {}, `Sub-topology ${s.subtopologyId} `, el('span', { class: 'meta' }, summary),
        ...(isWorst ? [' ', el('span', { class: 'flag' }, 'most lag')] : [])),
      el('table', {},
        el('thead', {}, el('tr', {}, ...['Task', 'Active', 'Standbys', 'Warm-ups', 'Lag', 'Rate'].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, ...rows)));
    block.dataset.subtopology = s.subtopologyId;
    return block;
  }

  function storesBlock(stores) {
    if (stores.length === 0) {
      return [];
    }
    return [el('h3', {}, 'State stores'), el('ul', {}, ...stores.map((s) => {
      const li = el('li', {}, `${s.storeName} (sub-topology ${s.subtopologyId}): `,
        s.holders.map((h) => `${who(h)} ${h.role} [${h.partitions.join(', ')}]`).join('; ') || 'held by none');
      li.dataset.store = s.storeName;
      li.dataset.members = s.holders.map((h) => h.memberId).join(' ');
      return li;
    }))];
  }

  /** Marks what the selected instance runs: its tasks' rows, and on the drawing the nodes of
   * its sub-topologies and its stores; and the sub-topology that lags most. */
  function highlight(section, entry) {
    const member = entry.selected;
    const drawing = section.querySelector('.drawing');
    for (const e of section.querySelectorAll('.instance-runs, .instance-selected, .runs-active, .runs-standby, .runs-warmup, .most-lag')) {
      e.classList.remove('instance-runs', 'instance-selected', 'runs-active', 'runs-standby', 'runs-warmup', 'most-lag');
    }
    for (const b of section.querySelectorAll('button.instance')) {
      b.setAttribute('aria-pressed', String(b.dataset.member === member));
    }
    const worst = entry.lag && entry.lag.worstSubtopologyId;
    if (worst !== null && worst !== undefined) {
      const cluster = drawing.querySelector(`g.cluster[data-name=${cssString(`Sub-topology: ${worst}`)}]`);
      if (cluster) cluster.classList.add('most-lag');
    }
    lagBadges(drawing, entry.lag);
    if (!member) {
      return;
    }
    const subtopologies = new Set();
    for (const row of section.querySelectorAll('tr.task')) {
      const role = row.dataset.active === member ? 'active'
        : row.dataset.standbys.split(' ').includes(member) ? 'standby'
          : row.dataset.warmups.split(' ').includes(member) ? 'warmup' : null;
      if (role) {
        row.classList.add('instance-selected', `runs-${role}`);
        subtopologies.add(row.dataset.subtopology);
      }
    }
    for (const g of drawing.querySelectorAll('g.node')) {
      const s = entry.nodes && entry.nodes.get(g.dataset.name);
      if (g.dataset.kind !== 'topic' && g.dataset.kind !== 'store' && s !== undefined && subtopologies.has(s)) {
        g.classList.add('instance-runs');
      }
    }
    for (const li of section.querySelectorAll('.stores li')) {
      if (li.dataset.members.split(' ').includes(member)) {
        const store = drawing.querySelector(`g.node[data-kind="store"][data-name=${cssString(li.dataset.store)}]`);
        if (store) store.classList.add('instance-runs');
      }
    }
  }

  const SVG_NS = 'http://www.w3.org/2000/svg';

  /** Each sub-topology's lag written on its box in the drawing, at the box's top right. */
  function lagBadges(drawing, lag) {
    const bySubtopology = new Map((lag ? lag.subtopologies : []).map((s) => [`Sub-topology: ${s.subtopologyId}`, s]));
    for (const cluster of drawing.querySelectorAll('g.cluster[data-kind="subtopology"]')) {
      const s = bySubtopology.get(cluster.dataset.name);
      let badge = cluster.querySelector('text.lag-badge');
      if (!s) {
        if (badge) badge.remove();
        continue;
      }
      const rect = cluster.querySelector('rect');
      if (!badge && rect) {
        badge = document.createElementNS(SVG_NS, 'text');
        badge.setAttribute('class', 'lag-badge');
        badge.setAttribute('text-anchor', 'end');
        badge.setAttribute('x', String(parseFloat(rect.getAttribute('x')) + parseFloat(rect.getAttribute('width')) - 8));
        badge.setAttribute('y', String(parseFloat(rect.getAttribute('y')) + 16));
        cluster.append(badge);
      }
      if (badge) {
        badge.textContent = `lag ${s.lag}${s.lagRatePerSecond === null ? '' : ` ${fmtRate(s.lagRatePerSecond)}`}`;
      }
    }
  }

  /** A TaskChange as task names (`0_1, 0_2`), with how many more there were. */
  const taskNames = (change) => {
    const names = Object.entries(change.tasks).flatMap(([s, ps]) => ps.map((p) => `${s}_${p}`));
    return names.join(', ') + (change.count > names.length ? ` and ${change.count - names.length} more` : '');
  };

  const EVENT_TEXT = {
    GROUP_EPOCH_BUMPED: (e) => `group epoch ${e.groupEpoch}`,
    MEMBER_JOINED: (e, m) => `${m} joined (member ${shortId(e.memberId)})`,
    MEMBER_LEFT: (e, m) => `${m} left`,
    MEMBER_FENCED: (e, m) => `${m} fenced: ${(e.reason || '').toLowerCase().replace('_', ' ')}`,
    MEMBER_REMOVED: (e, m) => `${m} removed`,
    TARGET_ASSIGNMENT_COMPUTED: (e) => `target assignment for epoch ${e.assignmentEpoch}`,
    TARGET_ASSIGNMENT_CHANGED: (e, m) => `${m}'s target: ${[['+', e.gainedActiveTasks], ['−', e.lostActiveTasks]]
      .filter(([, c]) => c.count > 0).map(([sign, c]) => `${sign}${taskNames(c)}`).join(' ')}`,
    MEMBER_RECONCILED: (e, m) => `${m} reconciled to epoch ${e.memberEpoch}${e.tookMs === undefined ? '' : ` in ${e.tookMs} ms`}`,
    TOPOLOGY_UPDATED: (e) => `topology epoch ${e.topologyEpoch}`,
  };

  async function refreshTimeline(section, entry) {
    if (!entry.timeline.open) {
      return;
    }
    let doc;
    try {
      doc = await getJson(`${groupPath(section.dataset.group)}/timeline`);
    } catch (e) {
      entry.timeline.querySelector('.events').replaceChildren(el('p', { class: 'error' }, `Cannot read the timeline: ${e.message}`));
      return;
    }
    // Members named as the instance list names them: by instance id, else process id.
    const names = new Map((entry.tasks ? entry.tasks.instances : []).map((i) => [i.memberId, who(i)]));
    for (const e of doc.events) {
      if (e.type === 'MEMBER_JOINED' && !names.has(e.memberId)) names.set(e.memberId, who(e));
    }
    const name = (id) => names.get(id) || shortId(id || '');
    const waiting = doc.reconciling.map((r) => `${who(r)} (epoch ${r.memberEpoch}${r.waitingMs === null ? '' : `, ${Math.round(r.waitingMs / 1000)} s`})`);
    entry.timeline.querySelector('.holding-up').replaceChildren(el('p', { class: waiting.length ? 'reconciling' : 'meta' },
      waiting.length ? `Holding up group epoch ${doc.groupEpoch}: ${waiting.join(', ')}` : `Every member is at group epoch ${doc.groupEpoch}.`));
    const rows = doc.events.slice().reverse().map((e) => {
      const row = el('tr', { class: e.type.toLowerCase() },
        el('td', {}, e.timeMs === null ? '–' : new Date(e.timeMs).toLocaleTimeString()),
        el('td', {}, String(e.groupEpoch)),
        el('td', {}, (EVENT_TEXT[e.type] || (() => e.type))(e, name(e.memberId))));
      row.dataset.type = e.type;
      if (e.memberId) row.dataset.member = e.memberId;
      if (e.gainedActiveTasks) row.dataset.gained = taskNames(e.gainedActiveTasks);
      return row;
    });
    entry.timeline.querySelector('.events').replaceChildren(el('table', {},
      el('thead', {}, el('tr', {}, ...['Time', 'Epoch', 'Event'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, ...rows)));
  }

  document.addEventListener('click', (event) => {
    const button = event.target.closest && event.target.closest('button.instance');
    const section = button && button.closest('section.group');
    const entry = section && state.get(section.dataset.group);
    if (entry) {
      entry.selected = entry.selected === button.dataset.member ? null : button.dataset.member;
      highlight(section, entry);
    }
  });

  async function poll() {
    try {
      for (const section of document.querySelectorAll('#groups section.group')) {
        await refresh(section);
      }
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }

  poll();
})();
