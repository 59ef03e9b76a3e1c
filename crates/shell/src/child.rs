//! What runs in the child between `fork` and `exec`: the only unsafe code of the crate.
//!
//! The parent may be multi-threaded (tokio), so after `fork` the child may only make
//! async-signal-safe calls: no allocation, no locks. Everything the child needs — the
//! Landlock ruleset (an fd, built and filled before the fork), the seccomp program, the
//! uid/gid map lines, the paths as C strings, the forwarder's addresses — is prepared by
//! [`crate::sandbox::Sandbox::prepare`]; here there are only raw system calls on that
//! data. We chose this over re-executing a helper binary: no extra exec per command (the
//! overhead target is 3 ms), and no dependency on how the embedding binary starts.
//!
//! Order matters:
//! 1. `no_new_privs` (Landlock and seccomp need it; setuid binaries lose their power);
//! 2. `unshare` a user, mount and network namespace, then write the uid/gid maps (the
//!    same ids inside, so files keep their owners);
//! 3. the protected paths' writable parents bound onto themselves (a mount point cannot
//!    be renamed away), then read-only bind mounts over the protected paths (before
//!    Landlock, which forbids mounting);
//! 4. `lo` up in the new network namespace;
//! 5. the proxy forwarder, when the network goes through the proxy: a listener bound on
//!    `127.0.0.1:<port>` in the namespace *before* `exec` (so the command never races it),
//!    served by a forked process that is neither Landlocked nor seccomp-filtered (it must
//!    reach the proxy's Unix socket outside) and ends with the command (a pidfd of it);
//! 6. `landlock_restrict_self`;
//! 7. the seccomp filter (last: it refuses `AF_UNIX` sockets the steps above use).
//!
//! Any failure returns the `errno` as an error: `spawn` then fails and the command never
//! runs unsandboxed.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// The proxy forwarder's prepared addresses.
pub(crate) struct Forwarder {
    /// The loopback port inside the namespace.
    pub(crate) port: u16,
    /// The proxy's Unix socket address.
    pub(crate) unix_addr: libc::sockaddr_un,
    /// `/dev/null`, for the forwarder's standard streams.
    pub(crate) dev_null: CString,
}

/// Everything the child does, prepared before the fork.
pub(crate) struct ChildSetup {
    pub(crate) unshare_flags: libc::c_int,
    pub(crate) uid_map: Vec<u8>,
    pub(crate) gid_map: Vec<u8>,
    pub(crate) proc_uid_map: CString,
    pub(crate) proc_gid_map: CString,
    pub(crate) proc_setgroups: CString,
    /// Paths to bind read-only onto themselves, with the mount flags that must be kept.
    pub(crate) read_only_binds: Vec<(CString, libc::c_ulong)>,
    /// Directories bound onto themselves as they are, before the read-only binds, so
    /// they cannot be renamed or removed ([`crate::plan::FsPlan::pinned_dirs`]).
    pub(crate) pinned_dirs: Vec<CString>,
    pub(crate) lo_up: bool,
    pub(crate) forwarder: Option<Forwarder>,
    pub(crate) ruleset: OwnedFd,
    pub(crate) seccomp: Option<Vec<seccompiler::sock_filter>>,
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl ChildSetup {
    /// Runs in the child after `fork`, before `exec`. Async-signal-safe: system calls on
    /// prepared data only.
    pub(crate) fn enter(&self) -> io::Result<()> {
        // SAFETY: every call below is a plain system call on memory owned by `self`, which
        // outlives the call; none allocates or takes a lock.
        unsafe {
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            check(libc::unshare(self.unshare_flags))?;
            write_file(&self.proc_setgroups, b"deny")?;
            write_file(&self.proc_uid_map, &self.uid_map)?;
            write_file(&self.proc_gid_map, &self.gid_map)?;
            if !self.read_only_binds.is_empty() {
                let root = c"/";
                check(libc::mount(
                    std::ptr::null(),
                    root.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ))?;
                for path in &self.pinned_dirs {
                    check(libc::mount(
                        path.as_ptr(),
                        path.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND,
                        std::ptr::null(),
                    ))?;
                }
                for (path, keep) in &self.read_only_binds {
                    check(libc::mount(
                        path.as_ptr(),
                        path.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND | libc::MS_REC,
                        std::ptr::null(),
                    ))?;
                    let flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | keep;
                    check(libc::mount(
                        std::ptr::null(),
                        path.as_ptr(),
                        std::ptr::null(),
                        flags,
                        std::ptr::null(),
                    ))?;
                }
            }
            if self.lo_up {
                loopback_up()?;
            }
            if let Some(forwarder) = &self.forwarder {
                start_forwarder(forwarder)?;
            }
            if libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.ruleset.as_raw_fd(),
                0,
            ) < 0
            {
                return Err(io::Error::last_os_error());
            }
            if let Some(program) = &self.seccomp {
                let prog = libc::sock_fprog {
                    len: program.len() as libc::c_ushort,
                    filter: program.as_ptr() as *mut libc::sock_filter,
                };
                check(libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ))?;
            }
        }
        Ok(())
    }
}

/// Writes `data` to the file at `path` (the `/proc/self` map files).
unsafe fn write_file(path: &CString, data: &[u8]) -> io::Result<()> {
    // SAFETY: the caller's contract (after fork): raw system calls on borrowed memory.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = io::Error::last_os_error();
        libc::close(fd);
        if written != data.len() as isize {
            Err(err)
        } else {
            Ok(())
        }
    }
}

/// `struct ifreq` for the flags ioctls: the name, then a union whose first member we use.
#[repr(C)]
struct IfreqFlags {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Brings the namespace's `lo` up (it starts down).
unsafe fn loopback_up() -> io::Result<()> {
    // SAFETY: raw system calls on a stack value.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut req = IfreqFlags {
            name: [0; libc::IFNAMSIZ],
            flags: 0,
            _pad: [0; 22],
        };
        req.name[0] = b'l' as libc::c_char;
        req.name[1] = b'o' as libc::c_char;
        let mut result = libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req as *mut IfreqFlags);
        if result >= 0 {
            req.flags |= libc::IFF_UP as libc::c_short;
            result = libc::ioctl(sock, libc::SIOCSIFFLAGS, &mut req as *mut IfreqFlags);
        }
        let err = io::Error::last_os_error();
        libc::close(sock);
        if result < 0 { Err(err) } else { Ok(()) }
    }
}

/// Binds the forwarder's listener in the namespace, then forks the process serving it.
unsafe fn start_forwarder(forwarder: &Forwarder) -> io::Result<()> {
    // SAFETY: raw system calls on prepared data and stack values; the forked process only
    // makes system calls and leaves with `_exit`.
    unsafe {
        let listener = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if listener < 0 {
            return Err(io::Error::last_os_error());
        }
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: forwarder.port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(listener, (&addr as *const libc::sockaddr_in).cast(), len) < 0
            || libc::listen(listener, 128) < 0
        {
            let err = io::Error::last_os_error();
            libc::close(listener);
            return Err(err);
        }
        let parent = libc::getpid();
        match libc::fork() {
            -1 => {
                let err = io::Error::last_os_error();
                libc::close(listener);
                Err(err)
            }
            0 => {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // `PDEATHSIG` alone is not enough: the command is Landlocked (signal
                // scoping) and the forwarder is not, and under load forwarders outlived
                // their commands, reparented to init, for good. A pidfd of the command
                // says when it is gone, whatever may signal whom; opened, then checked
                // to be our parent still, so it cannot name a recycled pid.
                let pidfd = libc::syscall(libc::SYS_pidfd_open, parent, 0) as libc::c_int;
                if pidfd < 0 || libc::getppid() != parent {
                    libc::_exit(0);
                }
                serve_forwarder(listener, pidfd, forwarder);
                libc::_exit(0)
            }
            _ => {
                libc::close(listener);
                Ok(())
            }
        }
    }
}

/// The forwarder's loop: each connection on `listener` is copied both ways to the proxy's
/// Unix socket by a process of its own.
/// It returns when `command` (a pidfd of the sandboxed command) says the command ended,
/// and each connection's process ends then too.
unsafe fn serve_forwarder(listener: libc::c_int, command: libc::c_int, forwarder: &Forwarder) {
    // SAFETY: as in `start_forwarder`.
    unsafe {
        // Hold none of the command's descriptors: not its output pipes (a reader would
        // wait for us), not std's exec-status pipe (spawn would wait for us).
        let null = libc::open(forwarder.dev_null.as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
        }
        // Both descriptors numbered from 3 up, the rest of them closed below.
        let listener = libc::fcntl(listener, libc::F_DUPFD_CLOEXEC, 3);
        let command = libc::fcntl(command, libc::F_DUPFD_CLOEXEC, 3);
        if listener < 0 || command < 0 {
            return;
        }
        let (low, high) = (listener.min(command) as u32, listener.max(command) as u32);
        for (from, to) in [(3, low), (low + 1, high), (high + 1, u32::MAX)] {
            if from < to {
                libc::syscall(libc::SYS_close_range, from, to - 1, 0u32);
            }
        }
        libc::signal(libc::SIGCHLD, libc::SIG_IGN);
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: listener,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: command,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            if libc::poll(fds.as_mut_ptr(), 2, -1) < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                return;
            }
            if fds[1].revents != 0 {
                return;
            }
            let conn = libc::accept4(
                listener,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            );
            if conn < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                return;
            }
            if libc::fork() == 0 {
                libc::close(listener);
                let upstream =
                    libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
                let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
                if upstream >= 0
                    && libc::connect(
                        upstream,
                        (&forwarder.unix_addr as *const libc::sockaddr_un).cast(),
                        len,
                    ) == 0
                {
                    pump(conn, upstream, command);
                }
                libc::_exit(0);
            }
            libc::close(conn);
        }
    }
}

/// Copies `a` ⇄ `b` until both directions reach end of file or the command (the pidfd
/// `command`) ends.
unsafe fn pump(a: libc::c_int, b: libc::c_int, command: libc::c_int) {
    // SAFETY: as in `start_forwarder`; the buffer is on the stack.
    unsafe {
        let mut buf = [0u8; 16 * 1024];
        let mut open = [true, true]; // a→b, b→a
        while open[0] || open[1] {
            let mut fds = [
                libc::pollfd {
                    fd: if open[0] { a } else { -1 },
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: if open[1] { b } else { -1 },
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: command,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            if libc::poll(fds.as_mut_ptr(), 3, -1) < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                return;
            }
            if fds[2].revents != 0 {
                return;
            }
            for (i, (from, to)) in [(a, b), (b, a)].into_iter().enumerate() {
                if !open[i] || fds[i].revents == 0 {
                    continue;
                }
                let n = libc::read(from, buf.as_mut_ptr().cast(), buf.len());
                if n <= 0 {
                    open[i] = false;
                    libc::shutdown(to, libc::SHUT_WR);
                    continue;
                }
                let mut done = 0usize;
                while done < n as usize {
                    let w = libc::write(to, buf.as_ptr().add(done).cast(), n as usize - done);
                    if w <= 0 {
                        return;
                    }
                    done += w as usize;
                }
            }
        }
    }
}

/// The current uid and gid.
pub(crate) fn ids() -> (libc::uid_t, libc::gid_t) {
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    unsafe { (libc::getuid(), libc::getgid()) }
}

/// The mount flags of the filesystem holding `path` that a read-only remount in a user
/// namespace must keep (the kernel refuses to drop locked ones).
pub(crate) fn locked_mount_flags(path: &CString) -> io::Result<libc::c_ulong> {
    // SAFETY: statvfs writes into the zeroed struct we own.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        check(libc::statvfs(path.as_ptr(), &mut st))?;
        st
    };
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(st_flag, _)| st.f_flag & st_flag != 0)
        .fold(0, |acc, (_, ms)| acc | ms))
}

/// The kernel's Landlock ABI version, `None` when Landlock is off or absent.
pub(crate) fn landlock_abi() -> Option<i32> {
    // SAFETY: the version query takes no memory (null attr, size 0).
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    (version > 0).then_some(version as i32)
}

/// Whether seccomp filters are available (`PR_GET_SECCOMP` answers).
pub(crate) fn seccomp_available() -> bool {
    // SAFETY: a query without memory.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

/// Whether a process can create a user, mount and network namespace and map itself in:
/// forks a child that tries (system calls only) and reports the errno.
pub(crate) fn probe_namespaces(
    setgroups: &CString,
    uid_map: &CString,
    uid_line: &[u8],
) -> Result<(), io::Error> {
    // SAFETY: the child makes raw system calls on prepared memory and leaves with `_exit`.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            let code = if libc::unshare(
                libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWNET,
            ) < 0
            {
                *libc::__errno_location()
            } else if write_file(setgroups, b"deny").is_err()
                || write_file(uid_map, uid_line).is_err()
            {
                libc::EPERM
            } else {
                0
            };
            libc::_exit(code);
        }
        let mut status = 0;
        if libc::waitpid(pid, &mut status, 0) < 0 {
            return Err(io::Error::last_os_error());
        }
        // A probe killed by a signal proves nothing: unavailable (fail closed).
        if !libc::WIFEXITED(status) {
            return Err(io::Error::other("the probe process was killed by a signal"));
        }
        match libc::WEXITSTATUS(status) {
            0 => Ok(()),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

/// Runs `setup` in the child of `cmd` before exec.
pub(crate) fn attach(cmd: &mut std::process::Command, setup: std::sync::Arc<ChildSetup>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: `ChildSetup::enter` is async-signal-safe (see the module doc).
    unsafe {
        cmd.pre_exec(move || setup.enter());
    }
}
