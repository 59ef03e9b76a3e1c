//! Turning a [`SandboxPolicy`] into something a `Command` runs under, and saying what this
//! machine supports.
//!
//! [`Sandbox::prepare`] does all the work that allocates or may fail slowly — the
//! filesystem snapshot, the Landlock ruleset, the seccomp program, the namespace maps —
//! in the parent, before `fork`; [`PreparedSandbox::apply`] hooks the async-signal-safe
//! rest (`child` (the module run in the forked child)) into a `std::process::Command` (or a tokio one, through
//! `as_std_mut`). Prepare once per command: the read rules are a snapshot.
//!
//! Fails closed: when the kernel cannot enforce what the policy needs (Landlock older than
//! ABI 3, no user namespaces, a listed Unix socket without Landlock ABI 9), `prepare`
//! returns an error naming what is missing and how to turn the sandbox off; it never
//! returns a weaker sandbox.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};

use crate::child::{self, ChildSetup, Forwarder};
use crate::plan::{FsPlan, Grant, RealFs};
use crate::policy::{NetworkPolicy, SandboxPolicy, UnixSockets};

/// The test-only switch: when set to `1`, the sandbox reports itself unavailable (for the
/// fail-closed tests of its callers).
pub const UNAVAILABLE_ENV: &str = "STRATA_SANDBOX_UNAVAILABLE";

/// The oldest Landlock ABI that can enforce the write rules (ABI 3 handles truncation).
pub const MIN_LANDLOCK_ABI: i32 = 3;

const HOW_TO_TURN_OFF: &str = "to run commands without the sandbox, set \"sandbox\": {\"enabled\": false} in settings or pass --no-sandbox";

/// Why a sandbox cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The machine lacks something the sandbox needs.
    #[error("the sandbox is unavailable: {missing}; {HOW_TO_TURN_OFF}")]
    Unavailable {
        /// What is missing, in words.
        missing: String,
    },
    /// The policy asks for something this kernel cannot enforce.
    #[error("the sandbox cannot enforce {what}; {HOW_TO_TURN_OFF}")]
    Unsupported {
        /// What, in words.
        what: String,
    },
    /// Building the Landlock ruleset failed.
    #[error("the sandbox's Landlock ruleset for {path}: {source}")]
    Landlock {
        /// The path of the rule (or `/` for the ruleset itself).
        path: PathBuf,
        /// The library's error.
        source: landlock::RulesetError,
    },
    /// Building the seccomp filter failed.
    #[error("the sandbox's seccomp filter: {0}")]
    Seccomp(String),
    /// A path cannot be passed to the kernel (it contains a NUL byte) or probed.
    #[error("the sandbox: {path}: {reason}")]
    Path {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// What this machine supports, for `strata sandbox check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version, `None` when Landlock is absent or off.
    pub landlock_abi: Option<i32>,
    /// `Ok` when user, mount and network namespaces can be created unprivileged.
    pub namespaces: Result<(), String>,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Set when the test-only switch [`UNAVAILABLE_ENV`] is on.
    pub forced_off: bool,
}

impl Support {
    /// `None` when the sandbox can run here, else one message naming what is missing and
    /// how to turn the sandbox off.
    pub fn missing(&self) -> Option<String> {
        let mut missing = Vec::new();
        if self.forced_off {
            missing.push(format!("{UNAVAILABLE_ENV}=1 is set (a test switch)"));
        }
        match self.landlock_abi {
            None => missing.push("Landlock is not enabled in this kernel (needs Linux 6.2+ with `landlock` in the lsm= boot list)".to_owned()),
            Some(abi) if abi < MIN_LANDLOCK_ABI => missing.push(format!("Landlock ABI {abi} is too old (needs {MIN_LANDLOCK_ABI}+, Linux 6.2)")),
            Some(_) => {}
        }
        if let Err(why) = &self.namespaces {
            missing.push(format!("unprivileged user and network namespaces are refused ({why}; check kernel.unprivileged_userns_clone, user.max_user_namespaces, or AppArmor's kernel.apparmor_restrict_unprivileged_userns, and whether a container forbids them)"));
        }
        if !self.seccomp {
            missing.push("seccomp filters are not available".to_owned());
        }
        (!missing.is_empty()).then(|| {
            format!(
                "the sandbox is unavailable: {}; {HOW_TO_TURN_OFF}",
                missing.join("; ")
            )
        })
    }

    /// A report for `strata sandbox check`, one line per feature.
    pub fn report(&self) -> String {
        let yes_no = |ok: bool| if ok { "yes" } else { "no" };
        let mut out = format!(
            "Landlock: {}\nuser+network namespaces: {}\nseccomp: {}\n",
            self.landlock_abi
                .map_or("no".to_owned(), |abi| format!("ABI {abi}")),
            match &self.namespaces {
                Ok(()) => "yes".to_owned(),
                Err(why) => format!("no ({why})"),
            },
            yes_no(self.seccomp),
        );
        out.push_str(&match self.missing() {
            None => "the sandbox can run here\n".to_owned(),
            Some(message) => format!("{message}\n"),
        });
        out
    }
}

/// Probes what this machine supports (forks once to try the namespaces).
pub fn check() -> Support {
    let forced_off = std::env::var_os(UNAVAILABLE_ENV).is_some_and(|v| v == "1");
    let (uid, _) = child::ids();
    let namespaces = child::probe_namespaces(
        &CString::from(c"/proc/self/setgroups"),
        &CString::from(c"/proc/self/uid_map"),
        format!("{uid} {uid} 1\n").as_bytes(),
    )
    .map_err(|e| e.to_string());
    Support {
        landlock_abi: child::landlock_abi(),
        namespaces,
        seccomp: child::seccomp_available(),
        forced_off,
    }
}

/// The entry point: prepares sandboxes for commands.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sandbox;

/// A sandbox ready to be attached to one command.
pub struct PreparedSandbox {
    setup: Arc<ChildSetup>,
    env: Vec<(String, String)>,
    plan: FsPlan,
}

impl std::fmt::Debug for PreparedSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedSandbox")
            .field("env", &self.env)
            .field("plan", &self.plan)
            .finish_non_exhaustive()
    }
}

impl PreparedSandbox {
    /// Makes `cmd` run under this sandbox: its environment gets `TMPDIR` (and the proxy
    /// variables), its child enters the sandbox before exec. `spawn` fails (and nothing
    /// runs) if the sandbox cannot be entered. For a `tokio::process::Command`, pass
    /// `cmd.as_std_mut()`.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        child::attach(cmd, Arc::clone(&self.setup));
    }

    /// The environment variables [`apply`](Self::apply) sets.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The filesystem plan in force (for `/sandbox` and explanations).
    pub fn plan(&self) -> &FsPlan {
        &self.plan
    }
}

/// The loopback port the forwarder listens on inside a namespace: any fixed port works
/// (the namespace is the command's own); an unusual one avoids clashing with a server the
/// command starts.
pub const PROXY_PORT_IN_SANDBOX: u16 = 31_080;

impl Sandbox {
    /// Prepares `policy` for one command.
    pub fn prepare(policy: &SandboxPolicy) -> Result<PreparedSandbox, SandboxError> {
        if std::env::var_os(UNAVAILABLE_ENV).is_some_and(|v| v == "1") {
            return Err(SandboxError::Unavailable {
                missing: format!("{UNAVAILABLE_ENV}=1 is set (a test switch)"),
            });
        }
        let abi = match child::landlock_abi() {
            Some(abi) if abi >= MIN_LANDLOCK_ABI => abi,
            found => {
                let support = Support {
                    landlock_abi: found,
                    namespaces: Ok(()),
                    seccomp: true,
                    forced_off: false,
                };
                return Err(SandboxError::Unavailable {
                    missing: support.missing().unwrap_or_default(),
                });
            }
        };
        let unix_by_path = match &policy.unix_sockets {
            UnixSockets::Listed(_) if abi < 9 => {
                return Err(SandboxError::Unsupported {
                    what: format!(
                        "sandbox.network.allowUnixSockets on Landlock ABI {abi}: allowing some Unix sockets by path needs ABI 9 (Linux 7.1); use allowAllUnixSockets or remove the list"
                    ),
                });
            }
            UnixSockets::Listed(_) => true,
            UnixSockets::Refused | UnixSockets::All => false,
        };
        let plan = FsPlan::build(policy, &RealFs);
        let ruleset = build_ruleset(&plan, ABI::from(abi), unix_by_path)?;
        let seccomp = build_seccomp(policy.unix_sockets == UnixSockets::Refused)?;

        let (uid, gid) = child::ids();
        let pinned_dirs = plan
            .pinned_dirs
            .iter()
            .map(|p| c_path(p))
            .collect::<Result<Vec<_>, _>>()?;
        let mut read_only_binds = Vec::new();
        for path in &plan.read_only_binds {
            let c_path = c_path(path)?;
            let keep = child::locked_mount_flags(&c_path).map_err(|e| SandboxError::Path {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            read_only_binds.push((c_path, keep));
        }
        let mut env = vec![(
            "TMPDIR".to_owned(),
            policy.session_tmp.display().to_string(),
        )];
        let forwarder = match &policy.network {
            NetworkPolicy::Isolated => None,
            NetworkPolicy::Proxied { socket, .. } => {
                let url = format!("http://127.0.0.1:{PROXY_PORT_IN_SANDBOX}");
                for key in [
                    "HTTP_PROXY",
                    "HTTPS_PROXY",
                    "http_proxy",
                    "https_proxy",
                    "ALL_PROXY",
                    "all_proxy",
                ] {
                    env.push((key.to_owned(), url.clone()));
                }
                env.push(("NO_PROXY".to_owned(), "localhost,127.0.0.1,::1".to_owned()));
                env.push(("no_proxy".to_owned(), "localhost,127.0.0.1,::1".to_owned()));
                Some(Forwarder {
                    port: PROXY_PORT_IN_SANDBOX,
                    unix_addr: unix_addr(socket)?,
                    dev_null: CString::from(c"/dev/null"),
                })
            }
        };
        let setup = ChildSetup {
            unshare_flags: libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWNET,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            proc_uid_map: CString::from(c"/proc/self/uid_map"),
            proc_gid_map: CString::from(c"/proc/self/gid_map"),
            proc_setgroups: CString::from(c"/proc/self/setgroups"),
            read_only_binds,
            pinned_dirs,
            lo_up: true,
            forwarder,
            ruleset,
            seccomp,
        };
        Ok(PreparedSandbox {
            setup: Arc::new(setup),
            env,
            plan,
        })
    }
}

fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::Path {
        path: path.to_path_buf(),
        reason: "contains a NUL byte".to_owned(),
    })
}

fn unix_addr(path: &Path) -> Result<libc::sockaddr_un, SandboxError> {
    // Built here, before the fork: the child only passes it to connect(2).
    let mut addr = libc::sockaddr_un {
        sun_family: libc::AF_UNIX as libc::sa_family_t,
        sun_path: [0; 108],
    };
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err(SandboxError::Path {
            path: path.to_path_buf(),
            reason: "too long for a Unix socket address".to_owned(),
        });
    }
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    Ok(addr)
}

fn build_ruleset(
    plan: &FsPlan,
    abi: ABI,
    unix_by_path: bool,
) -> Result<std::os::fd::OwnedFd, SandboxError> {
    let landlock_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SandboxError::Landlock {
            path: path.clone(),
            source,
        }
    };
    let read = AccessFs::from_read(abi);
    let write = AccessFs::from_write(abi) & !(AccessFs::IoctlDev | AccessFs::ResolveUnix);
    let mut handled = read | write;
    if unix_by_path {
        handled |= AccessFs::ResolveUnix;
    }
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .map_err(landlock_err(Path::new("/")))?;
    let scopes = Scope::from_all(abi);
    if !scopes.is_empty() {
        // Signals and abstract Unix sockets stay inside the sandbox's domain (ABI 6+;
        // older kernels: the network namespace already hides abstract sockets).
        ruleset = ruleset
            .scope(scopes)
            .map_err(landlock_err(Path::new("/")))?;
    }
    let mut created = ruleset.create().map_err(landlock_err(Path::new("/")))?;
    for rule in &plan.rules {
        let access: BitFlags<AccessFs> = match rule.grant {
            Grant::Read => read,
            Grant::List => AccessFs::ReadDir.into(),
            Grant::Write => write,
            Grant::WriteContent => AccessFs::WriteFile | AccessFs::Truncate,
            Grant::ConnectUnix => AccessFs::ResolveUnix.into(),
        };
        let access = if rule.is_dir {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        if access.is_empty() {
            continue;
        }
        // A path gone since the snapshot gets no rule: less access, never more.
        let Ok(fd) = PathFd::new(&rule.path) else {
            continue;
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(landlock_err(&rule.path))?;
    }
    let fd: Option<std::os::fd::OwnedFd> = created.into();
    fd.ok_or_else(|| SandboxError::Unavailable {
        missing: "Landlock refused the ruleset".to_owned(),
    })
}

fn build_seccomp(refuse_unix: bool) -> Result<Option<Vec<seccompiler::sock_filter>>, SandboxError> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let err = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // io_uring performs socket and file operations without the system calls a seccomp
    // filter sees.
    for nr in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(nr, Vec::new());
    }
    if refuse_unix {
        let condition = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            libc::AF_UNIX as u64,
        )
        .map_err(err)?;
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![condition]).map_err(err)?],
        );
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| {
            SandboxError::Seccomp(format!("{}: {e}", std::env::consts::ARCH))
        })?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(err)?;
    let program: seccompiler::BpfProgram = filter.try_into().map_err(err)?;
    let mut out = Vec::with_capacity(program.len() + 3);
    if cfg!(target_arch = "x86_64") {
        // x32 system calls carry bit 30 in their number and would slip past the rules
        // above: refuse them all (seccompiler does not).
        out.push(seccompiler::sock_filter {
            code: 0x20,
            jt: 0,
            jf: 0,
            k: 0,
        }); // ld [nr]
        out.push(seccompiler::sock_filter {
            code: 0x35,
            jt: 0,
            jf: 1,
            k: 0x4000_0000,
        }); // jge
        out.push(seccompiler::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: 0x0005_0000 | libc::EPERM as u32,
        }); // ret errno
    }
    out.extend(program);
    Ok(Some(out))
}
