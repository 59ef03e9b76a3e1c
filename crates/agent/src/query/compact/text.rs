//! The words of a compaction: the instructions the model summarises with, and the text
//! around the summary the continuing conversation starts from. strata's own wording
//! (COMPAT: the transcript flags, not the words, mark a summary).

/// The system prompt of the summary request.
pub(super) const SUMMARY_SYSTEM: &str = "You summarise a coding session between a user and \
a coding agent so that the agent can continue the work with nothing but your summary. \
Be precise and complete; never invent anything that is not in the conversation.";

/// The request appended to the conversation to get its summary.
pub(super) const SUMMARY_REQUEST: &str = "The conversation above is about to be replaced by \
your summary: the context window is filling up. Write the summary a continuing agent needs \
to carry on as if nothing was lost. Do not call any tool. Use these sections:\n\
1. Task: what the user asked for, in their words, and how the request evolved.\n\
2. Decisions: the technical decisions made and why, constraints and preferences the user \
stated.\n\
3. Files: every file read, created or changed, with what matters about each (key \
functions, the change made, line numbers when useful).\n\
4. Errors and fixes: each error met (build, test, runtime, tool denials) and how it was \
fixed or why it is still open.\n\
5. State: what is done and verified, what is done but unverified.\n\
6. Pending work: what remains, in order.\n\
7. Latest request: the user's most recent message quoted exactly, and the very next step \
you were about to take for it.";

/// Before the summary in the message that starts the compacted conversation.
pub(super) const SUMMARY_PREAMBLE: &str = "This conversation continues an earlier one that \
was compacted to fit the context window. A summary of the earlier part follows.\n\n";

/// After the summary: the earlier transcript is still on disk.
pub(super) fn summary_trailer(transcript: &str, trigger_auto: bool) -> String {
    let mut out = format!(
        "\n\nThe full earlier conversation is in the transcript {transcript} if an exact detail \
         is needed (read it with the Read or Grep tool)."
    );
    if trigger_auto {
        out.push_str(
            "\nContinue the work from where it stopped, without asking the user to repeat \
             anything: go on with the latest task.",
        );
    }
    out
}
