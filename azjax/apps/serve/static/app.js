// The azjax web board: draws the server's picture, turns clicks into legal moves, asks the
// agent for its replies. No build step and nothing fetched from elsewhere.
'use strict';

const $ = (id) => document.getElementById(id);
let info = null;      // GET /api/info
let view = null;      // the current game, as GET /api/games/ID returns it
let selected = [];    // the points clicked so far towards a move (Xiangqi: the piece)
let autoPlay = false; // two agents: keep playing

function setBusy(busy) {
  document.body.dataset.state = busy ? 'busy' : 'ready';
  $('board').classList.toggle('busy', busy);
}

function say(text) { $('message').textContent = text || ''; }

// Whether the game offers an option (GET /api/info's "options": komi, fen, piece_letters).
function offers(option) { return info.options.includes(option); }

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers['Content-Type'] = 'application/json';
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

async function request(method, path, body) {
  setBusy(true);
  try {
    show(await api(method, path, body));
    return true;
  } catch (error) {
    say(error.message);
    return false;
  } finally {
    setBusy(false);
  }
}

function agentToMove() {
  return view && !view.over && view.agents[String(view.to_move)] !== undefined;
}

function show(game) {
  view = game;
  selected = [];
  $('board').innerHTML = game.svg;
  for (const target of $('board').querySelectorAll('.target')) {
    target.addEventListener('click', () => click(Number(target.dataset.point)));
  }
  const mover = info.names[game.to_move];
  let status;
  if (game.over) status = 'Game over';
  else if (game.your_turn) status = `Your move (${mover})`;
  else status = `${mover} to move: ${game.agents[String(game.to_move)]} is thinking`;
  $('status').textContent = status;
  $('result').textContent = game.result || '';
  const moves = $('moves');
  moves.innerHTML = '';
  game.history.forEach((name, i) => {
    const item = document.createElement('li');
    const value = game.values[i];
    item.textContent = name + (value === null || value === undefined ? '' : ` (${value >= 0 ? '+' : ''}${value.toFixed(2)})`);
    moves.appendChild(item);
  });
  moves.scrollTop = moves.scrollHeight;
  $('value').textContent = game.analysis && game.value !== null
    ? `Value for ${mover}: ${game.value >= 0 ? '+' : ''}${game.value.toFixed(2)}` : '';
  $('analysis').checked = game.analysis;
  $('letters').checked = game.piece_letters;
  const passes = game.moves.filter((m) => m.clicks.length === 0);
  $('pass').hidden = !(game.your_turn && passes.length > 0);
  $('resign').hidden = info.watch || game.over;
  $('undo').disabled = !game.can_undo;
  $('next').hidden = !info.watch || game.over;
  $('auto').hidden = !info.watch || game.over;
  $('auto').textContent = autoPlay ? 'Pause' : 'Play on';
  const download = $('download');
  download.hidden = !game.over;
  download.href = `/api/games/${game.id}/record`;
  download.setAttribute('download', '');
  document.body.dataset.ply = String(game.history.length);
  document.body.dataset.over = String(game.over);
}

function highlight() {
  const next = new Set();
  for (const move of view.moves) {
    if (selected.every((p, i) => move.clicks[i] === p) && move.clicks.length > selected.length) {
      next.add(move.clicks[selected.length]);
    }
  }
  for (const target of $('board').querySelectorAll('.target')) {
    const point = Number(target.dataset.point);
    target.classList.toggle('selected', selected.includes(point));
    target.classList.toggle('legal', selected.length > 0 && next.has(point));
  }
}

async function click(point) {
  if (!view || document.body.dataset.state === 'busy') return;
  if (view.over) { say('The game is over: start a new one.'); return; }
  if (!view.your_turn) { say('Wait for the agent to move.'); return; }
  let clicks = [...selected, point];
  let matching = view.moves.filter((m) => clicks.every((p, i) => m.clicks[i] === p));
  if (matching.length === 0 && selected.length > 0) {  // another piece instead
    clicks = [point];
    matching = view.moves.filter((m) => m.clicks[0] === point);
  }
  if (matching.length === 0) {
    selected = [];
    highlight();
    say('Illegal move: not a legal move there.');
    return;
  }
  say('');
  const done = matching.find((m) => m.clicks.length === clicks.length);
  if (done) {
    await play(done.action);
  } else {
    selected = clicks;
    highlight();
  }
}

async function play(action) {
  if (await request('POST', `/api/games/${view.id}/move`, { action })) await replies();
}

// The agent answers whenever it is its turn (a game between two agents waits for Next).
async function replies() {
  while (agentToMove() && (!info.watch || autoPlay)) {
    if (!(await request('POST', `/api/games/${view.id}/advance`))) { autoPlay = false; break; }
  }
  if (view && view.over) autoPlay = false;
  if (view) $('auto').textContent = autoPlay ? 'Pause' : 'Play on';
}

async function newGame(event) {
  if (event) event.preventDefault();
  say('');
  autoPlay = false;
  const body = { side: $('side').value, simulations: Number($('simulations').value) };
  if (offers('komi') && $('komi').value !== '') body.komi = Number($('komi').value);
  if (offers('fen') && $('fen').value.trim() !== '') body.fen = $('fen').value.trim();
  if (await request('POST', '/api/games', body)) await replies();
}

async function start() {
  setBusy(true);
  info = await api('GET', '/api/info');
  $('game-name').textContent = `· ${info.game} · ${info.agents.join(' vs ')}`;
  document.title = `azjax · ${info.game}`;
  for (const n of info.choices) {
    const option = document.createElement('option');
    option.value = String(n);
    option.textContent = String(n);
    option.selected = n === info.simulations;
    $('simulations').appendChild(option);
  }
  if (offers('komi')) { $('komi-row').hidden = false; $('komi').value = info.komi; }
  if (offers('fen')) { $('fen-row').hidden = false; $('fen').placeholder = info.fen; }
  if (offers('piece_letters')) $('letters-row').hidden = false;
  if (info.watch) $('side-label').textContent = `${info.agents[0]} plays`;
  $('new-game').addEventListener('submit', newGame);
  $('pass').addEventListener('click', () => {
    const pass = view.moves.find((m) => m.clicks.length === 0);
    if (pass && view.your_turn) play(pass.action);
  });
  $('resign').addEventListener('click', () => request('POST', `/api/games/${view.id}/resign`));
  $('undo').addEventListener('click', async () => {
    autoPlay = false;
    if (await request('POST', `/api/games/${view.id}/undo`)) await replies();
  });
  $('next').addEventListener('click', () => request('POST', `/api/games/${view.id}/advance`));
  $('auto').addEventListener('click', () => { autoPlay = !autoPlay; replies(); });
  $('analysis').addEventListener('change', () =>
    request('POST', `/api/games/${view.id}/options`, { analysis: $('analysis').checked }));
  $('letters').addEventListener('change', () =>
    request('POST', `/api/games/${view.id}/options`, { piece_letters: $('letters').checked }));
  setBusy(false);
  await newGame();
}

start().catch((error) => say(error.message));
