//! How the programs that write files read their options, so that
//! [`writes`](super::writes) finds their operands: a small GNU-style option parser
//! and, per program, which options take a value and which values are files written.

/// A program's words as [`parse`] reads them.
pub(super) struct Parsed<'a> {
    /// Operands, in order.
    pub(super) operands: Vec<&'a str>,
    /// Options with values: (the option as given, the value).
    pub(super) values: Vec<(String, &'a str)>,
    /// Flags given (short ones one by one as `-x`, long ones as `--name`).
    pub(super) flags: Vec<String>,
}

impl Parsed<'_> {
    pub(super) fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    pub(super) fn value(&self, names: &[&str]) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(o, _)| names.contains(&o.as_str()))
            .map(|(_, v)| *v)
    }
}

/// How a program reads its options (GNU style: options and operands may mix, `--`
/// ends options, long options may be abbreviated).
pub(super) struct Syntax {
    /// Short options that take a value (attached or the next word).
    pub(super) short_value: &'static str,
    /// Long options that take a value (`--name=v` or `--name v`).
    pub(super) long_value: &'static [&'static str],
}

/// Splits `args` into operands, options with values and flags.
pub(super) fn parse<'a>(args: &'a [String], syntax: &Syntax) -> Parsed<'a> {
    let mut p = Parsed {
        operands: Vec::new(),
        values: Vec::new(),
        flags: Vec::new(),
    };
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg == "--" {
            p.operands.extend(args[i..].iter().map(String::as_str));
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            // `getopt_long` takes an unambiguous prefix; a prefix of a value option
            // is read as that option.
            let full = syntax
                .long_value
                .iter()
                .find(|l| **l == name)
                .or_else(|| syntax.long_value.iter().find(|l| l.starts_with(name)));
            match (full, attached) {
                (Some(full), Some(v)) => p.values.push((format!("--{full}"), v)),
                (Some(full), None) => {
                    if let Some(v) = args.get(i) {
                        p.values.push((format!("--{full}"), v));
                        i += 1;
                    }
                }
                (None, _) => p.flags.push(format!("--{name}")),
            }
            continue;
        }
        match arg.strip_prefix('-') {
            Some(cluster) if !cluster.is_empty() => {
                for (at, c) in cluster.char_indices() {
                    if syntax.short_value.contains(c) {
                        let rest = &cluster[at + c.len_utf8()..];
                        if !rest.is_empty() {
                            p.values.push((format!("-{c}"), rest));
                        } else if let Some(v) = args.get(i) {
                            p.values.push((format!("-{c}"), v));
                            i += 1;
                        }
                        break;
                    }
                    p.flags.push(format!("-{c}"));
                }
            }
            _ => p.operands.push(arg),
        }
    }
    p
}

pub(super) const CP: Syntax = Syntax {
    short_value: "tS",
    long_value: &["target-directory", "suffix"],
};
pub(super) const INSTALL: Syntax = Syntax {
    short_value: "tSmogC",
    long_value: &[
        "target-directory",
        "suffix",
        "mode",
        "owner",
        "group",
        "strip-program",
    ],
};
pub(super) const RSYNC: Syntax = Syntax {
    short_value: "eTfBM@",
    long_value: &[
        "rsh",
        "filter",
        "exclude",
        "include",
        "exclude-from",
        "include-from",
        "files-from",
        "temp-dir",
        "backup-dir",
        "suffix",
        "log-file",
        "log-file-format",
        "password-file",
        "rsync-path",
        "partial-dir",
        "compare-dest",
        "copy-dest",
        "link-dest",
        "chmod",
        "chown",
        "usermap",
        "groupmap",
        "timeout",
        "contimeout",
        "block-size",
        "max-size",
        "min-size",
        "bwlimit",
        "port",
        "sockopts",
        "out-format",
        "info",
        "debug",
        "checksum-choice",
        "compress-choice",
        "compress-level",
        "skip-compress",
        "modify-window",
        "max-delete",
        "iconv",
        "protocol",
        "stop-after",
        "stop-at",
        "write-batch",
        "read-batch",
        "only-write-batch",
        "address",
        "outbuf",
        "remote-option",
        "mkpath",
    ],
};
/// rsync options whose value is a local file or directory it writes.
pub(super) const RSYNC_WRITES: &[&str] = &[
    "-T",
    "--temp-dir",
    "--backup-dir",
    "--log-file",
    "--partial-dir",
    "--write-batch",
    "--only-write-batch",
];
pub(super) const NO_VALUES: Syntax = Syntax {
    short_value: "",
    long_value: &[],
};
pub(super) const TOUCH: Syntax = Syntax {
    short_value: "dtr",
    long_value: &["date", "reference", "time"],
};
pub(super) const TRUNCATE: Syntax = Syntax {
    short_value: "sr",
    long_value: &["size", "reference"],
};
pub(super) const MKDIR: Syntax = Syntax {
    short_value: "m",
    long_value: &["mode"],
};
pub(super) const SHRED: Syntax = Syntax {
    short_value: "ns",
    long_value: &["iterations", "size", "random-source"],
};
pub(super) const CHOWN: Syntax = Syntax {
    short_value: "",
    long_value: &["from", "reference"],
};
pub(super) const SED: Syntax = Syntax {
    short_value: "efl",
    long_value: &["expression", "file", "line-length"],
};
pub(super) const CURL: Syntax = Syntax {
    // Every curl short option that takes a value.
    short_value: "AbcCdDeEFHKmorTuUwxXyYzPQt",
    long_value: &[
        "output",
        "output-dir",
        "dump-header",
        "cookie-jar",
        "trace",
        "trace-ascii",
        "stderr",
        "libcurl",
        "etag-save",
        "hsts",
        "alt-svc",
        "data",
        "data-binary",
        "data-raw",
        "data-urlencode",
        "header",
        "user",
        "user-agent",
        "request",
        "url",
        "cookie",
        "config",
        "form",
        "max-time",
        "connect-timeout",
        "proxy",
        "referer",
        "range",
        "upload-file",
        "write-out",
        "retry",
        "cacert",
        "cert",
        "key",
    ],
};
/// curl options whose value is a file it writes.
pub(super) const CURL_WRITES: &[&str] = &[
    "-o",
    "--output",
    "-D",
    "--dump-header",
    "-c",
    "--cookie-jar",
    "--trace",
    "--trace-ascii",
    "--stderr",
    "--libcurl",
    "--etag-save",
    "--hsts",
    "--alt-svc",
];
pub(super) const WGET: Syntax = Syntax {
    short_value: "OoaPiBeUTtwQlADRIXYU",
    long_value: &[
        "output-document",
        "output-file",
        "append-output",
        "directory-prefix",
        "input-file",
        "base",
        "execute",
        "user-agent",
        "timeout",
        "tries",
        "wait",
        "quota",
        "level",
        "accept",
        "reject",
        "domains",
        "include-directories",
        "exclude-directories",
        "header",
        "user",
        "password",
        "post-data",
        "post-file",
        "save-cookies",
        "load-cookies",
        "method",
        "body-data",
    ],
};
/// wget options whose value is a file it writes.
pub(super) const WGET_WRITES: &[&str] = &[
    "-O",
    "--output-document",
    "-o",
    "--output-file",
    "-a",
    "--append-output",
    "--save-cookies",
];

pub(super) const SORT: Syntax = Syntax {
    short_value: "okStT",
    long_value: &[
        "output",
        "key",
        "field-separator",
        "buffer-size",
        "temporary-directory",
        "parallel",
        "batch-size",
        "compress-program",
        "files0-from",
        "sort",
    ],
};
pub(super) const UNIQ: Syntax = Syntax {
    short_value: "fsw",
    long_value: &[
        "skip-fields",
        "skip-chars",
        "check-chars",
        "all-repeated",
        "group",
    ],
};
pub(super) const AWK: Syntax = Syntax {
    short_value: "FvfiElW",
    long_value: &[
        "field-separator",
        "assign",
        "file",
        "include",
        "exec",
        "load",
        "source",
    ],
};
pub(super) const TAR: Syntax = Syntax {
    short_value: "fCbTXgKNVLHI",
    long_value: &[
        "file",
        "directory",
        "blocking-factor",
        "files-from",
        "exclude-from",
        "exclude",
        "listed-incremental",
        "starting-file",
        "newer",
        "label",
        "tape-length",
        "format",
        "use-compress-program",
        "transform",
        "owner",
        "group",
        "mode",
        "mtime",
        "suffix",
        "to-command",
        "strip-components",
    ],
};
pub(super) const UNZIP: Syntax = Syntax {
    short_value: "dxP",
    long_value: &[],
};
pub(super) const GIT_CONFIG: Syntax = Syntax {
    short_value: "f",
    long_value: &["file", "blob", "type", "default", "comment", "value", "url"],
};
