//! Unit tests of the lexer: splitting, quoting, redirections and substitutions.

use super::*;

fn texts(line: &str) -> Vec<String> {
    split_command(line).into_iter().map(|c| c.text).collect()
}

#[test]
fn splits_on_every_operator() {
    assert_eq!(
        texts("a 1 && b 2 || c; d | e & f\ng"),
        ["a 1", "b 2", "c", "d", "e", "f", "g"]
    );
}

#[test]
fn quotes_hide_operators() {
    let cmds = split_command(r#"echo "a && b" 'c; d' e\;f"#);
    assert_eq!(cmds.len(), 1);
    assert_eq!(cmds[0].words, ["echo", "a && b", "c; d", "e;f"]);
}

#[test]
fn substitutions_are_commands_too() {
    let t = texts("echo $(rm -rf x) \"`touch y`\" <(cat z)");
    assert!(t.contains(&"rm -rf x".to_owned()), "{t:?}");
    assert!(t.contains(&"touch y".to_owned()), "{t:?}");
    assert!(t.contains(&"cat z".to_owned()), "{t:?}");
    assert!(t.iter().any(|c| c.starts_with("echo $(rm -rf x)")), "{t:?}");
}

#[test]
fn arithmetic_and_parameter_expansion_are_not_commands() {
    assert_eq!(
        texts("echo $((1+2)) ${X:-a b}"),
        ["echo $((1+2)) ${X:-a b}"]
    );
}

#[test]
fn subshells_and_groups_and_keywords_are_unwrapped() {
    assert_eq!(texts("(cd a && make)"), ["cd a", "make"]);
    assert_eq!(texts("{ ls; pwd; }"), ["ls", "pwd"]);
    assert_eq!(texts("if test -f x; then rm x; fi"), ["test -f x", "rm x"]);
}

#[test]
fn output_redirection_into_a_file_is_flagged() {
    let c = &split_command("echo hi > out.txt")[0];
    assert!(c.writes_file);
    assert_eq!(c.words, ["echo", "hi"]);
    assert!(split_command("echo hi>>log")[0].writes_file);
    assert!(split_command("make &> build.log")[0].writes_file);
    assert!(!split_command("ls 2>&1")[0].writes_file);
    assert!(!split_command("ls 2>/dev/null >&2")[0].writes_file);
    assert!(!split_command("wc -l < in.txt")[0].writes_file);
    assert_eq!(split_command("ls 2>&1")[0].words, ["ls"]);
}

#[test]
fn redirection_targets_are_kept() {
    let targets = |line: &str| -> Vec<(String, bool)> {
        split_command(line)
            .iter()
            .flat_map(|c| c.redirects.iter().map(|r| (r.target.clone(), r.dynamic)))
            .collect()
    };
    let known = |t: &str| (t.to_owned(), false);
    assert_eq!(
        targets("echo a > 'x y' 2>>e &>f >&g 2>&1 >/dev/null <in"),
        [known("x y"), known("e"), known("f"), known("g")]
    );
    assert_eq!(targets("exec 3<> .git/config"), [known(".git/config")]);
    assert_eq!(targets("{ echo a; } > .bashrc"), [known(".bashrc")]);
    assert_eq!(targets("(echo a) >| out"), [known("out")]);
    assert_eq!(targets("echo $(echo a > in) b"), [known("in")]);
    assert_eq!(
        targets("echo a > \"$F\" > $(f) >&$FD"),
        [
            ("$F".to_owned(), true),
            ("$(f)".to_owned(), true),
            ("$FD".to_owned(), true)
        ]
    );
    assert_eq!(targets("echo a >"), [(String::new(), true)]);
    for c in split_command("a > x; b 2>&1; c >> y | d") {
        assert_eq!(c.writes_file, !c.redirects.is_empty(), "{c:?}");
    }
}

#[test]
fn heredoc_bodies_are_not_commands() {
    let t = texts("cat <<'EOF' > f.txt\nrm -rf /\nEOF\necho done");
    assert_eq!(t.len(), 2, "{t:?}");
    assert!(t[0].starts_with("cat"));
    assert_eq!(t[1], "echo done");
    assert!(split_command("cat <<EOF > f\nx\nEOF")[0].writes_file);
}

#[test]
fn comments_are_ignored() {
    assert_eq!(texts("ls # && rm x"), ["ls"]);
    assert_eq!(texts("echo a#b"), ["echo a#b"]);
}

#[test]
fn assignments_are_counted_and_skippable() {
    let c = &split_command("FOO=1 BAR='a b' rm -rf x")[0];
    assert_eq!(c.assignments, 2);
    assert_eq!(c.program(), Some("rm"));
    assert_eq!(c.command_text(), "rm -rf x");
}

#[test]
fn ansi_c_and_locale_quotes_are_removed() {
    let c = &split_command(r#"$'\x72m' $"a b" "$'x'""#)[0];
    assert_eq!(c.words, ["rm", "a b", "$'x'"]);
    assert_eq!(c.dynamic, [false, false, false]);
}

#[test]
fn words_known_only_when_run_are_marked_dynamic() {
    // The outer command comes after those of its substitutions.
    let dynamic = |line: &str| split_command(line).last().unwrap().dynamic.clone();
    assert_eq!(dynamic("$X a"), [true, false]);
    assert_eq!(dynamic("rm${IFS}x"), [true]);
    assert_eq!(dynamic("\"$(echo rm)\" a"), [true, false]);
    assert_eq!(dynamic("/bin/r? /bin/r[m] r* {rm,x} r{a..b}"), [true; 5]);
    assert_eq!(dynamic("'r?' \\* {} a{b} [ x ] $ a$"), [false; 9]);
    assert_eq!(dynamic("cat <(ls)"), [false, true]);
}

#[test]
fn empty_and_blank_lines_have_no_commands() {
    assert!(split_command("").is_empty());
    assert!(split_command("  ;\n ").is_empty());
}
