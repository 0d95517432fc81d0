"""Why a learning run ended without applying anything, in words a person understands: the
`note` of a skipped or failed execution on every execution list (docs/adr/0015).

Every note is a fixed sentence (or one with a date or a setting's name filled in): never a
word of an item, an entry or a model's answer, since an execution list is read by people
who may not read those.
"""

from __future__ import annotations

# Skipped: nothing to read.
NOTHING_NEW = "nothing new to learn: the items through this run were read by an earlier run"
LEARNED_ELSEWHERE = "another run learned this evidence first"
LEARNED_IN_PART = (
    "another run learned part of this evidence first, and items this run's model never saw "
    "became readable since: a later run reads them with the rest"
)
OPEN_TURN_AHEAD = (
    "the unread items through this run belong to turns still open; they are read once those "
    "turns complete or are abandoned"
)
SOURCE_GONE = "the conversation this run reads is gone"
POOL_GONE = "the memory this run teaches is gone"
ONLY_APP_RESULTS = (
    "only App results are unread; they are read with a person's words in a later turn"
)
# Skipped: a setting says no.
GENERATE_OFF = "the session's generate switch is off"
TITLES_OFF = "generateTitle is off for this thread's agent"
ALREADY_TITLED = "the thread has a title already"
NO_USER_MESSAGE = "the thread has no user message to take a title from yet"


def budget_note(period: str) -> str:
    """A memory Bot's spent budget: learning waits for `period` (`day:2026-12-02`,
    `month:2027-01`, as `domain.memory_bot.next_period_key` names it) to begin."""
    unit, _sep, start = period.partition(":")
    if unit == "month":
        start = f"{start}-01"
    scope = "day" if unit == "day" else "month"
    return f"the memory bot's budget for this {scope} is spent; learning waits until {start} (UTC)"


# Failed: what a person can do about it, by the failure's kind (`error.type`).
_FAILED = {
    "ModelTimeout": "the model did not answer within the step's 2 minutes",
    "ModelThrottled": "the model's provider kept refusing calls (throttled)",
    "ModelUnavailable": "the model's provider could not be reached or refused the call",
    "ModelConfigError": "the model is not configured correctly in this deployment",
    "NoModel": (
        "the model this run names is not configured in this deployment, or the organization's "
        "allowedModels no longer allows it"
    ),
    "InvalidModelOutput": "the model's answer was not a valid memory update",
    "EvidenceTooLarge": "the unread items are too large for one run",
    "ExecutionLost": "the run's saved state was lost",
    "States.Timeout": "a step took longer than its time limit",
}
AGAIN = "; the read position did not move, so a later run reads this evidence again"


def failure_note(error_type: str) -> str:
    """Why a run failed, by its error's kind, and that its evidence is read again later."""
    return _FAILED.get(error_type, f"learning failed ({error_type})") + AGAIN
