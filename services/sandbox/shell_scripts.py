"""The shell programs of a session, and how a command is framed for them (pure data, no I/O).

:data:`BOOT` is what the session's process runs: it reads :data:`DRIVER` from stdin. The driver
reads commands framed by :func:`frame_lines`, runs each in its own process group, prints an end
marker, then kills what the command left (:data:`SWEEP`) before it reads the next. :data:`KILLER`
kills a running command from a separate process. See :mod:`services.sandbox.framing` for the
protocol.

Whose processes are whose. In an agent's container the driver, the kill and green's other
processes (disk scans, probes) run as root; the agent's commands run as a uid of their own
(``setpriv`` with :data:`DROP`: no groups, no capabilities, none to gain, no new privileges).
The kernel then refuses the agent every signal to, every trace of, and every read of the memory,
environment or open files of green's processes, and every write to root's files (``/bin/sh``,
``/usr/bin/bash``, ``/etc/ld.so.preload``). Before the agent's first command the driver makes the
paths its task names (and its home) the agent's own; green looks its own programs up on
:data:`SYSTEM_PATH` only. Green's own containers (builds, verification, judging) run their
commands as root, as the driver.

The cleanup after a command. With an agent uid: ``kill -KILL -1`` run *as that uid* (a fresh
``setpriv``'d shell), which the kernel delivers in one pass under its task list lock to every
process of the agent and to none of green's (a disk scan running meanwhile goes on), and a fork
racing it fails, so a process that forks in a loop (each child leaving its parent, ``setsid``)
cannot outrun it the way it outruns a scan of ``/proc``. Should that killer not run (the
container at its process limit: no fork; or the agent killed it in the moment before it
killed), the driver kills every process but pid 1 and itself, as root, without a fork. Without
an agent uid, in a container: ``kill -KILL -1`` from the driver (every process but pid 1 and the
caller). Elsewhere (a host, a shared pid namespace) only the command's own session and group
are swept, by scanning. With an agent uid the result is printed before the cleanup (off the
command's path); without one, after it: as root, the cleanup would also end whatever green runs
in the container as soon as it has the result (a ``mkdir``, a disk scan). Either way the next
command is read only once the cleanup is done; a ``<nonce>:go`` line before each command's
output marks where it starts, so nothing a dying process printed counts as the next's.

A timed-out command is killed by :data:`KILLER`, a separate exec of root's: in an agent's
container with ``kill -KILL -1`` as root (the driver too: the session is replaced), which forks
nothing and which no process of the agent can signal, stop or outrun.

How a command gets its own group: in a container whose image has bash, the driver runs in bash
and starts each command as a job of its own (``set -m``: a process group, no exec); elsewhere, or
without bash, with ``setsid`` (its own session and group, at the price of one more exec per
command: 1.1 ms of a trivial command's 3.9 ms in the session). Either way a timeout kills the
command's group as one and ``kill 0`` in it cannot reach the driver; in a container what left the
group dies with ``kill -KILL -1`` as the command ends. A session would add only what the
fallback's scan needs: a child that left the group but not the session.

The bash started ahead (in a container with bash): the fork and exec of a command's own bash
cost about 1.7 ms of a trivial command's 2 ms there. So, once a command has ended and its
processes are gone, the driver starts the next command's bash at once, as a job of its own
(``coproc``), off the command's path: a fresh exec (``setpriv``'s, under the agent's uid; none
of the driver's memory, so no nonce;
fds 0 to 2 only) that waits for the command's text on a pipe, reads it to EOF, takes stdin from
``/dev/null``, enters the working directory and ``eval``s it. When a command arrives, the driver
writes it to that pipe: 0.34 ms for ``true`` against 2.0 ms for a new bash (means of 300 in
the task image). Nothing of the agent runs while it waits: the previous command's processes
died before it started, and it is the only process of the next command until its text arrives.
A command longer than 4,096 characters gets a new bash as before (bash reads a pipe a byte at a
time: about 11 KB costs what the exec saves), and the idle one is killed first. What differs for
the command: bash reports a child killed by a signal (``Killed``, ``Segmentation fault``), as
``bash -c`` does for all but a lone simple command, which it execs; a syntax error names
``eval`` instead of ``-c``.
"""

from __future__ import annotations

SWEEP = r"""
# Orphans are swept only where this script runs as a `docker exec` process: its parent lives
# outside the container's pid namespace, so $PPID is 0. Anywhere else (a host, a shared pid
# namespace) processes adopted by pid 1 are not ours, and the rule stays off.
[ "$PPID" = 0 ] && _orphans=1 || _orphans=
sweep() {  # SIGKILL, until none is left, every process of group or session $1, and (in a
  # container) every orphan that left its session: parent pid 1, session not pid 1's (the
  # keeper, pid 1, and its `sleep` child are in pid 1's session).
  _t=$1 _i=0
  case $_t in '' | 0 | 1) return 0 ;; esac
  while [ "$_i" -lt 200 ]; do
    _f=
    for _s in /proc/[0-9]*/stat; do
      { read -r _l <"$_s"; } 2>/dev/null || continue
      set -- ${_l##*") "}  # the fields after the command name: state ppid pgrp session ...
      case $1 in Z | X) continue ;; esac
      if [ "$3" = "$_t" ] || [ "$4" = "$_t" ] || { [ -n "$_orphans" ] && [ "$2" = 1 ] && [ "$4" != 1 ]; }; then
        _p=${_s#/proc/}; kill -KILL "${_p%/stat}" 2>/dev/null; _f=1
      fi
    done
    [ -z "$_f" ] && return 0
    _i=$((_i + 1))
  done
}
clean() {  # after a command: with an agent uid, every process of that uid in one pass (kill(2)
  # with pid -1 as that uid: green's own root processes are spared, a fork cannot race it); in a
  # container without one, every process but pid 1 and this shell; elsewhere session or group $1
  if [ -n "$U" ]; then
    if crowded || ! $AS /bin/sh -c 'kill -KILL -1 2>/dev/null; exit 0' 2>/dev/null; then
      kill -KILL -1 2>/dev/null  # no fork, or the agent killed its killer: everything, as root
    fi
    settle_uid
  elif [ -n "$_orphans" ]; then kill -KILL -1 2>/dev/null; settle; else sweep "$1"; fi
}
crowded() {  _m=  # the container is at (or next to) its process limit: a fork would wait, then fail,
  # so the cleanup kills as root without one (it may end a measurement green runs meanwhile)
  for _g in /sys/fs/cgroup /sys/fs/cgroup/pids; do  # cgroup v2, v1
    { read -r _c <"$_g/pids.current" && read -r _m <"$_g/pids.max"; } 2>/dev/null && break
  done
  [ -n "$_m" ] || return 1
  [ "$_m" != max ] && [ $((_c + 8)) -ge "$_m" ]
}
settle_uid() {  # wait (bounded, as settle) until no process of uid $U is left but zombies
  _i=0
  while [ "$_i" -lt 30000 ]; do
    _f=
    for _s in /proc/[0-9]*/status; do
      _st= _u=
      { while read -r _k _v _r; do
        case $_k in State:) _st=$_v ;; Uid:) _u=$_v; break ;; esac
      done <"$_s"; } 2>/dev/null
      if [ "$_u" = "$U" ] && [ "$_st" != Z ] && [ "$_st" != X ]; then _f=1; break; fi
    done
    [ -z "$_f" ] && return 0
    _i=$((_i + 1))
  done
}
settle() {  # wait (a bounded while: 30,000 scans, about 1 s here, room for a big process's
  # teardown on a loaded machine) until what `kill -KILL -1` hit has exited; nothing can
  # start meanwhile (a fork by a process with SIGKILL pending fails). Left alone: zombies,
  # pid 1's session (the keeper and its `sleep`) and this shell (a command that ran as a job of
  # the driver is in the driver's session: it is waited for).
  _i=0
  while [ "$_i" -lt 30000 ]; do
    _f=
    for _s in /proc/[0-9]*/stat; do
      case $_s in /proc/1/stat | "/proc/$$/stat") continue ;; esac  # always spared: not read
      { read -r _l <"$_s"; } 2>/dev/null || continue
      set -- ${_l##*") "}
      case $1 in Z | X) continue ;; esac
      case $4 in 1) continue ;; esac
      _f=1
      break
    done
    [ -z "$_f" ] && return 0
    _i=$((_i + 1))
  done
}
"""

BOOT = 'read -r k; d=; while [ "$k" -gt 0 ]; do IFS= read -r l; d="$d$l\n"; k=$((k-1)); done; eval "$d"'
"""What the session exec runs (and ``ps`` shows): it reads :data:`DRIVER` from stdin, framed
like a command, so the long script stays out of the process list."""

SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
"""Where green's own processes in a container look for programs: the image's system
directories, which only root may write (the agent's PATH may name a directory it writes)."""

DROP = "--clear-groups --inh-caps=-all --bounding-set=-all --nnp"
"""What ``setpriv`` drops besides root's uid and gid before it runs the agent's program: the
supplementary groups, every capability (inheritable, and the bounding set, so no later exec
can gain one), and new privileges (no setuid or file-capability program raises them)."""

DRIVER = (
    (
        SWEEP
        + r"""
# The agent's programs are found on the PATH this process started with; green's own on the
# system's directories only.
AP=${_arena_ap:-$PATH}; unset _arena_ap; PATH=@SYSTEM_PATH@; export PATH
command -v setsid >/dev/null 2>&1 || { echo "arena: the image has no setsid" >&2; exit 3; }
# In a container, go on in bash (if the image has it) for its job control; the driver's text,
# $d of BOOT, is handed over in the environment and dropped before any command runs.
if [ -n "$_orphans" ] && [ -z "$BASH_VERSION" ] && command -v bash >/dev/null 2>&1; then
  _arena_driver=$d _arena_ap=$AP exec bash -c \
    'd=$_arena_driver _arena_ap=$_arena_ap; unset _arena_driver; eval "$d"' "$0" "$@"
fi
W=$1 U=$2 H=$3; shift 3
SID=$(command -v setsid) SN=sh; S=$(command -v sh); command -v bash >/dev/null 2>&1 && SN=bash && S=$(command -v bash)
AS=
if [ -n "$U" ]; then  # the agent's commands run as uid and gid $U, with nothing of root's
  SP=$(command -v setpriv) || {
    echo "arena: the task image has no setpriv (util-linux): the agent's commands cannot run as a user of their own" >&2
    exit 3
  }
  AS="$SP --reuid=$U --regid=$U @DROP@"
  if [ "$#" -gt 0 ]; then  # before its first command: what the agent may write becomes its own
    # (and / one it may enter: an image imported from a 0700 tree has it so on btrfs)
    mkdir -p -- "$@" && chown -R -h -- "$U:$U" "$@" && chmod go+rx / || {
      echo "arena: cannot hand $* over to uid $U" >&2
      exit 3
    }
  fi
else
  H=$HOME
fi
J=; [ -n "$_orphans" ] && [ -n "$BASH_VERSION" ] && J=1
if [ -n "$J" ]; then  # bash only (hidden from sh's parser in quotes): the bash started ahead
  exec 3>&1  # the session's stdout, for that bash (its own stdout is the coproc's pipe)
  A='IFS= read -r -d "" _arena_cmd; exec 0</dev/null; cd "$1" 2>/dev/null || cd /; set --; eval "$_arena_cmd"'
  eval '
  ahead() {  # the next command'"'"'s bash, started as a job of its own (its own process
    # group) once a command has ended: it reads the command from a pipe until EOF, runs it
    set -m; coproc _w { HOME=$H PATH=$AP exec $AS "$S" -c "$A" bash "$W" 1>&3 2>&1 3>&-; }; set +m
    eval "exec ${_w[0]}<&-"
  }
  take() {  # p: that bash, once it has the whole command (none ready, or a long command that
    # it would read a byte at a time: p stays empty and the caller starts a new bash)
    p= q=${_w_PID-} f=${_w[1]-}
    if [ -n "$q" ] && [ "${f:--1}" -ge 0 ] && [ "${#c}" -le 4096 ] && kill -0 "$q" 2>/dev/null; then
      trap "" PIPE; printf "%s" "$c" >&"$f" 2>/dev/null && p=$q; trap - PIPE
    fi
    [ "${f:--1}" -ge 0 ] && eval "exec $f>&-"
    [ -z "$p" ] && [ -n "$q" ] && { kill -KILL "$q"; wait "$q"; } 2>/dev/null
    return 0
  }'
fi
IFS= read -r n || exit 0
printf '%s %s %s\n' "$n" "$$" "$SN"
[ -n "$J" ] && ahead
while read -r n k; do
  c=
  while [ "$k" -gt 0 ]; do IFS= read -r l || exit 0; c="$c$l
"; k=$((k - 1)); done
  printf '%s:ack 1\n' "$n" >&2
  printf '%s:go 1\n' "$n"  # on stdout: bytes before it (a dying command's last) are not this one's
  p=
  [ -n "$J" ] && take
  if [ -z "$p" ]; then  # a new shell for it
    cd "$W" 2>/dev/null || cd /
    if [ -n "$J" ]; then  # a job of its own: its own process group, no setsid exec
      set -m; HOME=$H PATH=$AP $AS "$S" -c "$c" "$SN" </dev/null 2>&1 3>&- & set +m
    else
      HOME=$H PATH=$AP "$SID" $AS "$S" -c "$c" "$SN" </dev/null 2>&1 &
    fi
    p=$!
  fi
  printf '%s:sid %s\n' "$n" "$p" >&2
  wait "$p"; r=$?
  cd /
  if [ -n "$U" ]; then  # the result first: the cleanup spares green's processes, so it can
    printf '%s %s\n' "$n" "$r"  # be off the command's path (the next is read once it is done)
    clean "$p"
  else  # the cleanup first: as root it ends every process, green's next exec too (a mkdir)
    clean "$p"
    printf '%s %s\n' "$n" "$r"
  fi
  [ -n "$J" ] && ahead
done
"""
    )
    .replace("@SYSTEM_PATH@", SYSTEM_PATH)
    .replace("@DROP@", DROP)
)
"""The session loop (POSIX sh, run by ``/bin/sh``; in a container it goes on in bash when the
image has it). ``$1``: the commands' working directory; ``$2``: the agent's uid (empty: the
commands run as the session's own user, root, as in green's own containers); ``$3``: the
agent's home; then the paths handed over to the agent (its home among them) before its first
command, on the first session only.
Protocol: a ``<nonce>`` line, answered ``<nonce> <pid> <shell>``; then per command a
``<nonce> <k>`` line and the command as ``k`` raw lines, answered ``<nonce>:ack 1`` and
``<nonce>:sid <sid>`` (the command's process group, and session where it has its own) on stderr,
``<nonce>:go 1``, the command's output and ``<nonce> <status>`` on stdout. Then it kills what
the command left (:data:`SWEEP` ``clean``) before it reads the next."""

KILLER = (
    SWEEP
    + r"""
[ -n "$ABANDON" ] && [ -n "$_orphans" ] && { kill -KILL -1 2>/dev/null; settle; exit 0; }
case $2 in  # the command's group in one pass (no shell of it sees a child killed and says so
  # before it dies itself), then swept; never pid 1's or all (-1)
  '' | 0 | 1) ;;
  *) kill -KILL "-$2" 2>/dev/null; sweep "$2" ;;
esac
for s in /proc/[0-9]*/stat; do
  { read -r l <"$s"; } 2>/dev/null || continue
  set -- "$1" ${l##*") "}
  if [ "$3" = "$1" ]; then q=${s#/proc/}; sweep "${q%/stat}"; fi
done
[ -n "$ABANDON" ] && sweep "$1"
exit 0
"""
)
"""Kills a running command where commands run as the session's own user: ``$1`` the driver's
pid, ``$2`` the command's session id (may be empty). It also sweeps the session of every child
of the driver, in case the id was not reported yet (the driver's own cleanup then kills the
rest). With ``ABANDON=1`` in the environment it kills the driver too: in a container every
process but pid 1 and itself."""


def frame_lines(text: str) -> bytes:
    """A ``<k>`` line, then ``text`` as ``k`` newline-terminated lines: read back verbatim by
    ``IFS= read -r`` in any POSIX shell, whatever quotes, backslashes or heredocs it holds.
    NUL bytes are dropped (no shell command can hold one)."""
    data = text.replace("\0", "").encode("utf-8", errors="surrogateescape") + b"\n"
    return b"%d\n" % data.count(b"\n") + data
