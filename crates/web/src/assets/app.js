// strata serve: the live part of the pages.
//
// Everything from a session is put on the page with textContent, never parsed as HTML;
// the server's content security policy lets this file, and nothing else, run.
'use strict';

(function () {
  const page = document.body.dataset.page;
  const remoteLine = document.getElementById('remote');
  const SESSION_ID = /^[A-Za-z0-9_=-]{1,128}$/;
  let serverLost = false;
  let remoteStatus = 'connected';

  function byId(id) {
    return document.getElementById(id);
  }

  function setText(element, value) {
    element.textContent = value === null || value === undefined || value === '' ? '—' : String(value);
  }

  function setTime(element, iso) {
    element.textContent = '';
    if (!iso) {
      element.textContent = '—';
      return;
    }
    const time = document.createElement('time');
    time.dateTime = iso;
    const date = new Date(iso);
    time.textContent = isNaN(date.getTime()) ? iso : date.toLocaleString();
    element.appendChild(time);
  }

  function showConnection() {
    if (!remoteLine) return;
    let message = '';
    if (serverLost) {
      message = 'strata serve cannot be reached; retrying. What this page shows may be out of date.';
    } else if (remoteStatus !== 'connected') {
      message = 'strata serve lost its connection to NATS and is reconnecting. What this page shows may be out of date.';
    }
    remoteLine.textContent = message;
    remoteLine.className = message ? 'remote lost' : 'remote';
  }

  // An EventSource reconnects by itself after a network error, but not after an HTTP
  // error (the server could not reach NATS): then a new one is opened after a pause,
  // at the address `url()` gives then.
  function listen(url, handlers) {
    let source = null;
    function open() {
      source = new EventSource(url());
      for (const name of Object.keys(handlers)) {
        source.addEventListener(name, function (event) {
          handlers[name](JSON.parse(event.data));
        });
      }
      source.onopen = function () {
        serverLost = false;
        showConnection();
      };
      source.onerror = function () {
        serverLost = true;
        showConnection();
        if (source.readyState === EventSource.CLOSED) setTimeout(open, 2000);
      };
    }
    open();
  }

  function onRemote(data) {
    remoteStatus = data.status;
    showConnection();
  }

  function byUpdatedThenId(a, b) {
    return (b.updated_at || '').localeCompare(a.updated_at || '') || a.id.localeCompare(b.id);
  }

  function indexPage() {
    const body = document.querySelector('#sessions tbody');
    const empty = byId('empty');
    const rows = new Map();

    function cell(tr, name) {
      const td = document.createElement('td');
      td.className = name;
      tr.appendChild(td);
      return td;
    }

    function rowElement(row) {
      const tr = document.createElement('tr');
      tr.dataset.session = row.id;
      const title = cell(tr, 'title');
      const name = row.title || row.id;
      if (SESSION_ID.test(row.id)) {
        const link = document.createElement('a');
        link.href = '/sessions/' + encodeURIComponent(row.id);
        link.textContent = name;
        title.appendChild(link);
      } else {
        title.textContent = name;
      }
      if (row.unreadable) {
        const note = document.createElement('span');
        note.className = 'unreadable';
        note.textContent = ' (its metadata cannot be read: ' + row.unreadable + ')';
        title.appendChild(note);
      }
      setText(cell(tr, 'cwd'), row.cwd);
      setText(cell(tr, 'model'), row.model);
      setText(cell(tr, 'mode'), row.permission_mode);
      setText(cell(tr, 'status'), row.status);
      setTime(cell(tr, 'updated'), row.updated_at);
      return tr;
    }

    function render() {
      const list = Array.from(rows.values()).sort(byUpdatedThenId);
      const fragment = document.createDocumentFragment();
      for (const row of list) fragment.appendChild(rowElement(row));
      body.replaceChildren(fragment);
      empty.hidden = list.length > 0;
    }

    listen(function () { return '/events'; }, {
      snapshot: function (data) {
        rows.clear();
        for (const row of data.sessions) rows.set(row.id, row);
        render();
      },
      session: function (row) {
        rows.set(row.id, row);
        render();
      },
      removed: function (data) {
        rows.delete(data.id);
        render();
      },
      remote: onRemote,
    });
  }

  function sessionPage() {
    const id = document.body.dataset.session;
    const conversation = byId('conversation');
    const reply = byId('mode-reply');
    const buttons = Array.from(document.querySelectorAll('#modes button[data-mode]'));
    let lastSeq = 0;
    let row = null;
    let pending = null;
    let pendingTimer = null;

    function say(message, kind) {
      reply.textContent = message;
      reply.className = 'reply' + (kind ? ' ' + kind : '');
    }

    function showReply(answer) {
      if (answer.accepted) {
        say('The session switched to ' + answer.mode + '.', 'accepted');
      } else {
        say('The session refused ' + answer.requested + (answer.reason ? ': ' + answer.reason : '') +
          '. It stays in ' + answer.mode + '.', 'refused');
      }
    }

    function answerTo(request) {
      return row && row.mode_reply && row.mode_reply.id === request ? row.mode_reply : null;
    }

    function showRow(next) {
      row = next;
      const title = row.title || row.id;
      byId('title').textContent = title;
      document.title = title + ' · strata';
      setText(byId('cwd'), row.cwd);
      setText(byId('model'), row.model);
      setText(byId('status'), row.status);
      setTime(byId('updated'), row.updated_at);
      const missing = byId('missing');
      if (missing) missing.hidden = true;
      for (const button of buttons) {
        button.setAttribute('aria-pressed', String(button.dataset.mode === row.permission_mode));
      }
      const answer = pending && answerTo(pending);
      if (answer) {
        pending = null;
        clearTimeout(pendingTimer);
        showReply(answer);
      }
    }

    function item(entry) {
      const li = document.createElement('li');
      li.className = 'item ' + entry.kind;
      switch (entry.kind) {
        case 'prompt':
        case 'command':
        case 'note':
        case 'text':
          li.textContent = entry.text;
          break;
        case 'tool': {
          const name = document.createElement('span');
          name.className = 'tool-name';
          name.textContent = entry.name;
          const summary = document.createElement('span');
          summary.className = 'tool-summary';
          summary.textContent = entry.summary;
          li.append(name, ' ', summary);
          break;
        }
        case 'mode':
          li.textContent = 'Permission mode: ' + entry.mode;
          break;
        case 'compacted':
          li.textContent = 'The conversation was compacted here.';
          break;
        default:
          return null;
      }
      return li;
    }

    function addEntry(data) {
      if (data.seq <= lastSeq) return;
      lastSeq = data.seq;
      const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
      for (const entry of data.items) {
        const li = item(entry);
        if (li) conversation.appendChild(li);
      }
      if (atBottom) window.scrollTo(0, document.body.scrollHeight);
    }

    async function ask(mode) {
      say('Asking the session to switch to ' + mode + '…', 'pending');
      let response;
      try {
        response = await fetch('/api/sessions/' + encodeURIComponent(id) + '/mode', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ mode: mode }),
        });
      } catch (error) {
        say('strata serve cannot be reached: ' + error.message, 'refused');
        return;
      }
      const body = await response.json().catch(function () { return {}; });
      if (!response.ok) {
        say(body.error || 'The change failed (HTTP ' + response.status + ').', 'refused');
        return;
      }
      const request = body.request.id;
      // The session may have answered before this response came back.
      const answer = answerTo(request);
      if (answer) {
        showReply(answer);
        return;
      }
      pending = request;
      clearTimeout(pendingTimer);
      pendingTimer = setTimeout(function () {
        if (pending !== request) return;
        const running = row && row.status === 'active';
        say('Written to the session\'s metadata; no answer from the session yet' +
          (running ? '.' : ' (it is not running: it takes this mode when it is resumed).'), 'pending');
      }, 3000);
    }

    for (const button of buttons) {
      button.addEventListener('click', function () { ask(button.dataset.mode); });
    }

    listen(function () {
      return '/sessions/' + encodeURIComponent(id) + '/events' + (lastSeq ? '?after=' + lastSeq : '');
    }, {
      session: showRow,
      removed: function () {
        say('This session was removed from the remote.', 'refused');
      },
      entry: addEntry,
      remote: onRemote,
    });
  }

  for (const time of document.querySelectorAll('time[datetime]')) {
    setTime(time.parentElement, time.getAttribute('datetime'));
  }
  if (page === 'index') indexPage();
  if (page === 'session') sessionPage();
})();
