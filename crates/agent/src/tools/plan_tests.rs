use super::*;

#[test]
fn bs5_the_plan_slug_is_three_words_and_stable_for_a_session() {
    let id = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
    let slug = plan_slug(id);
    assert_eq!(slug, plan_slug(id));
    assert_eq!(slug.split('-').count(), 3, "{slug}");
    assert!(slug.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
}

#[test]
fn plan_tools_are_read_only_and_only_exit_asks_the_user() {
    assert!(EnterPlanMode.is_read_only(&json!({})));
    assert!(!EnterPlanMode.asks_the_user());
    assert!(ExitPlanMode.is_read_only(&json!({})));
    assert!(ExitPlanMode.asks_the_user());
}
