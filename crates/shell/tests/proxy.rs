//! The allowlist proxy end to end: a sandboxed `curl` reaches a listed host through the
//! proxy (plain HTTP and a CONNECT tunnel), an unlisted one gets `403`, and the test server
//! itself cannot be reached directly. The host names map to a loopback test server through
//! the proxy's resolver (no `/etc/hosts`).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(target_os = "linux")]
#![allow(clippy::print_stderr)]

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;

use strata_shell::policy::PolicyContext;
use strata_shell::proxy::{AllowlistDecider, BoxFuture, DomainList, Proxy, Resolver};
use strata_shell::{Sandbox, SandboxPolicy, SandboxSettings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct ToLoopback(u16);

impl Resolver for ToLoopback {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        _port: u16,
    ) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>> {
        let port = self.0;
        let known = host.ends_with(".test");
        Box::pin(async move {
            if known {
                Ok(vec![SocketAddr::from(([127, 0, 0, 1], port))])
            } else {
                Ok(vec![])
            }
        })
    }
}

async fn http_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    let Ok(n) = stream.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                }
                let body = "hello from the test server\n";
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i26_tests_allowed_domain_through_proxy_unlisted_refused() {
    let curl = Command::new("sh")
        .args(["-c", "command -v curl"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !curl {
        eprintln!("skipped: curl is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (project, tmp) = (base.join("proj"), base.join("tmp"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let port = http_server().await;
    let socket = base.join("proxy.sock");
    let decider = AllowlistDecider {
        list: DomainList::new(["allowed.test"]),
        ask: None,
    };
    let _proxy = Proxy::start(&socket, Arc::new(decider), Arc::new(ToLoopback(port))).unwrap();

    let mut settings = SandboxSettings::default();
    settings.network.allowed_domains = vec!["allowed.test".into()];
    let context = PolicyContext {
        project_dir: project.clone(),
        additional_dirs: vec![],
        home: base.join("home"),
        session_tmp: tmp,
    };
    let policy = SandboxPolicy::from_settings(&settings, &context, Some(&socket)).unwrap();

    let run = move |args: Vec<String>| {
        let policy = policy.clone();
        let project = project.clone();
        tokio::task::spawn_blocking(move || {
            let sandbox = Sandbox::prepare(&policy).unwrap();
            let mut cmd = Command::new("curl");
            cmd.args(["-sS", "--max-time", "20"])
                .args(&args)
                .current_dir(&project);
            sandbox.apply(&mut cmd);
            cmd.output().unwrap()
        })
    };
    let url = |host: &str| format!("http://{host}:{port}/");

    let out = run.clone()(vec![url("allowed.test")]).await.unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hello from the test server\n"
    );

    // The same through a CONNECT tunnel (what HTTPS uses).
    let out = run.clone()(vec!["-p".into(), url("allowed.test")])
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hello from the test server\n"
    );

    let out = run.clone()(vec![
        "-o".into(),
        "/dev/null".into(),
        "-w".into(),
        "%{http_code}".into(),
        url("other.test"),
    ])
    .await
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "403", "{out:?}");
    let out = run.clone()(vec!["-p".into(), url("other.test")])
        .await
        .unwrap();
    assert!(!out.status.success(), "{out:?}");

    // Around the proxy, the server is not reachable.
    let out = run(vec![
        "--noproxy".into(),
        "*".into(),
        format!("http://127.0.0.1:{port}/"),
    ])
    .await
    .unwrap();
    assert!(!out.status.success(), "{out:?}");
}
