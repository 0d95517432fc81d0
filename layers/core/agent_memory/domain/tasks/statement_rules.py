"""The rules that read what people say about themselves (domain/tasks/statements.py): one
pattern per way of saying an attribute, in English, German, French and Spanish, the key it is
kept under (the attribute, never the value) and the frame of its content.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from agent_memory.domain.secret_words import wordset

# --- values ---------------------------------------------------------------------------------

_NAME = r"(?P<v>[^\W\d_][\w'.-]*(?:\s+[^\W\d_][\w'.-]*){0,2})"
_LATER = re.compile(
    r"[\s,]+(?:anymore|any\s+more|now|please|pls|mehr|bitte|plus|s'il\s+te\s+plaît"
    r"|s'il\s+vous\s+plaît|ya|más|por\s+favor|nunca\s+más)$",
    re.IGNORECASE,
)
LIST_SPLIT = re.compile(r"\s*(?:,|;|&|\band\b|\bund\b|\bet\b|\by\b|\be\b|\bsowie\b)\s*", re.I)
_FIRST_PERSON = (
    (re.compile(r"\bmy\b", re.I), "their"),
    (re.compile(r"\bme\b", re.I), "them"),
    (re.compile(r"\bmine\b", re.I), "theirs"),
    (re.compile(r"\bmyself\b", re.I), "themselves"),
)


def in_english(table: str) -> dict[str, str]:
    """`english: word word ...` lines, read as {word: english}."""
    pairs = (line.split(":") for line in table.strip().splitlines())
    return {word: english.strip() for english, words in pairs for word in words.split()}


# Closed words said in other languages, in the English of the frames.
_ENGLISH = in_english(
    """
    married: verheiratet marié mariée casado casada
    single: ledig célibataire soltero soltera
    divorced: geschieden divorcé divorcée divorciado divorciada
    engaged: verlobt fiancé fiancée comprometido comprometida
    widowed: verwitwet veuf veuve viudo viuda
    vegetarian: vegetarier vegetarierin vegetarisch végétarien végétarienne vegetariano vegetariana
    vegan: veganer veganerin végétalien végétalienne végane vegano vegana
    """
)


def value(text: str) -> str:
    """A value as said, its closing words and first person turned to the third."""
    text = _LATER.sub("", text.strip().rstrip(".!?,;:").strip())
    for pattern, replacement in _FIRST_PERSON:
        text = pattern.sub(replacement, text)
    return _ENGLISH.get(text.lower(), text)


def fold(text: str) -> str:
    """Lowercase ASCII: how values and contents are compared across accents and case."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


# --- rules ----------------------------------------------------------------------------------

# The key may depend on the value ("Berlin" is a city, "a flat" is not); None skips it.
Key = str | Callable[[str], str | None]


@dataclass(frozen=True)
class Rule:
    """One way of saying an attribute: its pattern, its key and the frame of its content."""

    source: str  # the whole sentence matches it, in any case
    key: Key
    # The content, `{who}` for the person and `{v}` for the value; a rule that takes a value
    # back keeps no content.
    frame: str = ""
    negated: bool = False
    many: bool = False
    split: bool = False  # "peanuts and shellfish": one statement per value

    # Compiled at the first sentence read: the rules take about 6 ms to compile, which a
    # process whose learning asks a model, not the `local/rules` extractor, never pays.
    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(rf"^(?:{self.source})$", re.IGNORECASE)


def _place(kind: str) -> Callable[[str], str | None]:
    """A named place (capitalised) is a city; anything else is where, not which city."""
    return lambda value: f"{kind}-city" if value[:1].isupper() else kind


def _employer_or_field(value: str) -> str:
    return "employer" if value[:1].isupper() else "work-field"


def _named(value: str) -> str | None:
    """A name: one to three capitalised words, none a known adjective of a person."""
    words = value.split()
    if not all(word[:1].isupper() for word in words) or fold(words[0]) in _NOT_NAMES:
        return None
    return "name"


def _occupation(value: str) -> str | None:
    """ "a nurse", "a software engineer at Acme": a job by its name or its ending."""
    head = re.split(r"\s+(?:at|for|in)\s+", value, maxsplit=1)[0]
    last = fold(head.split()[-1])
    if last in _NOT_JOBS or not (last in _JOBS or _JOB_ENDING.search(last)):
        return None
    return "occupation"


_NOT_NAMES = wordset(
    """sorry sure fine ok okay here back ready done busy tired hungry happy sad new late early
    american british english german french spanish italian dutch swiss austrian polish irish
    scottish canadian mexican brazilian argentinian chinese japanese korean indian russian
    ukrainian turkish greek portuguese swedish norwegian danish finnish belgian australian
    catholic protestant christian muslim jewish buddhist hindu atheist"""
)
_JOBS = wordset(
    """nurse chef cook pilot student doctor lawyer teacher dentist surgeon architect engineer
    developer designer consultant accountant journalist scientist researcher professor lecturer
    pharmacist physician therapist psychologist electrician plumber carpenter mechanic farmer
    firefighter officer soldier artist musician writer editor translator programmer analyst
    manager founder entrepreneur freelancer intern retiree"""
)
_NOT_JOBS = wordset(
    """mother father brother sister daughter son partner member beginner smoker nonsmoker user
    customer fan lover person owner believer supporter follower reader listener viewer player
    gamer leftie"""
)
_JOB_ENDING = re.compile(r"(?:ist|ician|eer|ect|grapher|ologist|iatrist|smith|wright)$")

_DIETS = (
    r"(?P<v>vegetarian|vegan|pescatarian|pescetarian|flexitarian|teetotal|teetotaler"
    r"|teetotaller|celiac|coeliac)"
)
_STATUS = r"(?P<v>married|single|divorced|engaged|widowed|separated)"
_HEALTH = (
    r"(?P<v>diabetic|pregnant|colou?r-?blind|deaf|hard\s+of\s+hearing|asthmatic|epileptic"
    r"|left-handed|right-handed)"
)
_NATIONS = (
    r"(?P<v>american|british|english|german|french|spanish|italian|dutch|swiss|austrian"
    r"|polish|irish|scottish|canadian|mexican|brazilian|argentinian|chinese|japanese|korean"
    r"|indian|russian|ukrainian|turkish|greek|portuguese|swedish|norwegian|danish|finnish"
    r"|belgian|australian)"
)
_HI = r"(?:(?:hi|hello|hey|hallo|bonjour|salut|hola)[,!\s]+)?"
_NO_LONGER = r"(?:no\s+longer|not\s+any\s*more|do\s+not|not)"
_ANYMORE = r"(?:\s+(?:anymore|any\s+more))?"

RULES: tuple[Rule, ...] = (
    # -- names ---------------------------------------------------------------------------------
    Rule(
        rf"{_HI}(?:my\s+name\s+is|my\s+name's|i\s+am\s+called|people\s+call\s+me|i\s+go\s+by"
        rf"|ich\s+hei(?:ß|ss)e|mein\s+name\s+ist|je\s+m'appelle|mon\s+nom\s+est"
        rf"|mon\s+prénom\s+est|me\s+llamo|mi\s+nombre\s+es)\s+{_NAME}",
        "name",
        "{who}'s name is {v}.",
    ),
    Rule(rf"{_HI}i\s+am\s+{_NAME}", _named, "{who}'s name is {v}."),
    Rule(
        r"(?:(?:please|you\s+can|just)\s+)?(?:call\s+me|nenn\s+mich|nennt\s+mich|nennen\s+sie"
        r"\s+mich|appelle-moi|appelez-moi|ll[aá]mame|ll[aá]menme)\s+" + _NAME,
        "preferred-name",
        "{who} wants to be called {v}.",
    ),
    Rule(
        r"(?:please\s+)?(?:do\s+not|never|stop)\s+call(?:ing)?\s+me\s+" + _NAME,
        "preferred-name",
        negated=True,
    ),
    Rule(
        r"(?:nenn|nennt)\s+mich\s+nicht\s+(?:mehr\s+)?"
        + _NAME
        + r"|ne\s+m'appel(?:le|lez)\s+(?:pas|plus)\s+"
        + _NAME.replace("?P<v>", "?P<fr>")
        + r"|no\s+me\s+llames\s+(?:más\s+)?"
        + _NAME.replace("?P<v>", "?P<es>"),
        "preferred-name",
        negated=True,
    ),
    # -- age, origin, birth --------------------------------------------------------------------
    Rule(
        r"(?:i\s+am|ich\s+bin|j'ai|tengo)\s+(?P<v>\d{1,3})(?:\s+(?:years\s+old|years\s+of\s+age"
        r"|jahre\s+alt|ans|años))?",
        "age",
        "{who} is {v} years old.",
    ),
    Rule(
        r"(?:i\s+am\s+(?:originally\s+)?from|i\s+come\s+from|ich\s+(?:bin|komme)\s+aus"
        r"|je\s+viens\s+(?:de|d')|soy\s+de|vengo\s+de)\s*(?P<v>.+)",
        "origin",
        "{who} is from {v}.",
    ),
    Rule(r"i\s+was\s+born\s+in\s+(?P<v>\d{4})", "birth-year", "{who} was born in {v}."),
    Rule(r"i\s+was\s+born\s+in\s+(?P<v>\D.*)", "birthplace", "{who} was born in {v}."),
    # -- where they live -----------------------------------------------------------------------
    Rule(
        r"i\s+(?:live|am\s+living|reside|am\s+based|have\s+lived|have\s+been\s+living)"
        r"(?:\s+(?:now|currently|right\s+now))?\s+(?:in|at)\s+(?P<v>.+)",
        _place("home"),
        "{who} lives in {v}.",
    ),
    Rule(
        r"(?:i\s+(?:just\s+|recently\s+)?moved\s+(?:from\s+.+?\s+)?to|ich\s+bin\s+nach"
        r"|j'ai\s+déménagé\s+(?:à|a|en|au)|me\s+mudé\s+a)\s+(?P<v>.+?)(?:\s+gezogen)?",
        _place("home"),
        "{who} moved to {v}.",
    ),
    Rule(
        r"(?:ich\s+(?:wohne|lebe)|j'habite|je\s+(?:vis|réside)|(?:yo\s+)?vivo|resido)"
        r"(?:\s+(?:jetzt|derzeit|seit\s+\w+|maintenant|actuellement|ahora))?"
        r"\s+(?:in|à|a|en|au|aux|dans)\s+(?P<v>.+)",
        _place("home"),
        "{who} lives in {v}.",
    ),
    Rule(r"i\s+live\s+with\s+(?P<v>.+)", "household", "{who} lives with {v}."),
    Rule(
        rf"i\s+(?:am\s+)?{_NO_LONGER}\s+(?:live|living)\s+(?:in|at)\s+(?P<v>.+?){_ANYMORE}"
        r"|i\s+moved\s+(?:away\s+from|out\s+of)\s+(?P<out>.+)"
        r"|ich\s+(?:wohne|lebe)\s+nicht\s+mehr\s+in\s+(?P<de>.+)"
        r"|je\s+n'habite\s+plus\s+(?:à|a|en|au|aux|dans)\s+(?P<fr>.+)"
        r"|ya\s+no\s+vivo\s+en\s+(?P<es>.+)",
        _place("home"),
        negated=True,
    ),
    # -- work ----------------------------------------------------------------------------------
    Rule(
        r"i\s+work\s+(?P<v>(?:from|at)\s+home|(?:from|at)\s+the\s+office|remotely)",
        "work-location",
        "{who} works {v}.",
    ),
    Rule(
        r"(?:i\s+work\s+as|ich\s+arbeite\s+als|je\s+travaille\s+comme|trabajo\s+como)"
        r"\s+(?P<v>.+)",
        "occupation",
        "{who} works as {v}.",
    ),
    Rule(
        r"(?:i\s+(?:work|am\s+employed)\s+(?:at|for|by)|ich\s+arbeite\s+(?:bei|für)"
        r"|je\s+travaille\s+(?:chez|pour)|trabajo\s+para)\s+(?P<v>.+)",
        "employer",
        "{who} works at {v}.",
    ),
    Rule(
        r"(?:i\s+work\s+in|trabajo\s+en)\s+(?P<v>.+)",
        _employer_or_field,
        "{who} works in {v}.",
    ),
    Rule(
        r"i\s+am\s+(?P<v>an?\s+(?:[\w-]+\s+){0,3}[\w-]+(?:\s+(?:at|for|in)\s+.+)?)",
        _occupation,
        "{who} is {v}.",
    ),
    Rule(
        rf"i\s+(?:{_NO_LONGER}\s+work\s+(?:at|for)|left|quit\s+my\s+job\s+at)\s+"
        rf"(?P<v>.+?){_ANYMORE}"
        r"|ich\s+arbeite\s+nicht\s+mehr\s+(?:bei|für)\s+(?P<de>.+)"
        r"|je\s+ne\s+travaille\s+plus\s+(?:chez|pour)\s+(?P<fr>.+)"
        r"|ya\s+no\s+trabajo\s+(?:en|para)\s+(?P<es>.+)",
        "employer",
        negated=True,
    ),
    Rule(rf"i\s+am\s+{_NO_LONGER}\s+an?\s+(?P<v>.+?){_ANYMORE}", "occupation", negated=True),
    # -- allergies, intolerances, diet, health -------------------------------------------------
    Rule(
        r"(?:i\s+am\s+(?:very\s+|severely\s+|mildly\s+|also\s+)?allergic\s+to"
        r"|i\s+have\s+an?\s+allergy\s+to|ich\s+bin\s+(?:auch\s+)?allergisch\s+(?:gegen|auf)"
        r"|je\s+suis\s+(?:aussi\s+)?allergique\s+(?:à|a|au|aux)"
        r"|soy\s+al[ée]rgic[oa]\s+al?|tengo\s+alergia\s+al?)\s+(?P<v>.+)",
        "allergy",
        "{who} is allergic to {v}.",
        many=True,
        split=True,
    ),
    Rule(
        r"i\s+have\s+an?\s+(?P<v>[\w-]+(?:\s+[\w-]+)?)\s+allergy",
        "allergy",
        "{who} is allergic to {v}.",
        many=True,
    ),
    Rule(
        rf"i\s+am\s+(?:{_NO_LONGER}|no)\s+(?:longer\s+)?allergic\s+to\s+(?P<v>.+?){_ANYMORE}"
        r"|ich\s+bin\s+nicht\s+mehr\s+allergisch\s+(?:gegen|auf)\s+(?P<de>.+)"
        r"|je\s+ne\s+suis\s+plus\s+allergique\s+(?:à|a|au|aux)\s+(?P<fr>.+)"
        r"|ya\s+no\s+soy\s+al[ée]rgic[oa]\s+al?\s+(?P<es>.+)",
        "allergy",
        negated=True,
        many=True,
        split=True,
    ),
    Rule(
        r"i\s+am\s+(?P<v>lactose|gluten|fructose|histamine)[\s-]intolerant",
        "intolerance",
        "{who} is {v} intolerant.",
        many=True,
    ),
    Rule(
        r"i\s+am\s+intolerant\s+to\s+(?P<v>.+)",
        "intolerance",
        "{who} is intolerant to {v}.",
        many=True,
        split=True,
    ),
    Rule(
        rf"i\s+am\s+(?:an?\s+|strictly\s+)?{_DIETS}"
        r"|ich\s+bin\s+(?P<de>vegetarier(?:in)?|veganer(?:in)?|vegetarisch|vegan)"
        r"|je\s+suis\s+(?P<fr>végétarien(?:ne)?|végétalien(?:ne)?|vegan|végane)"
        r"|soy\s+(?P<es>vegetarian[oa]|vegan[oa])",
        "diet",
        "{who} is {v}.",
        many=True,
    ),
    Rule(
        r"(?:i\s+(?:do\s+not|never)\s+eat|i\s+eat\s+no|ich\s+esse\s+kein(?:e|en)?"
        r"|je\s+ne\s+mange\s+(?:pas|jamais)\s+(?:de|d')|no\s+como)\s*(?P<v>.+)",
        "diet",
        "{who} does not eat {v}.",
        many=True,
    ),
    Rule(
        r"i\s+(?:do\s+not|never)\s+drink\s+(?P<v>.+)",
        "diet",
        "{who} does not drink {v}.",
        many=True,
    ),
    Rule(
        rf"i\s+am\s+no\s+longer\s+(?:an?\s+)?{_DIETS}"
        r"|ich\s+bin\s+kein(?:e)?\s+(?P<de>vegetarier(?:in)?|veganer(?:in)?)\s+mehr"
        r"|i\s+eat\s+(?P<again>.+?)\s+again",
        "diet",
        negated=True,
        many=True,
    ),
    Rule(rf"i\s+am\s+{_HEALTH}", "health", "{who} is {v}.", many=True),
    # -- family status, nationality --------------------------------------------------------------
    Rule(
        rf"i\s+am\s+{_STATUS}|i\s+am\s+(?P<rel>in\s+a\s+relationship)"
        r"|ich\s+bin\s+(?P<de>verheiratet|ledig|geschieden|verlobt|verwitwet)"
        r"|je\s+suis\s+(?P<fr>mariée?|célibataire|divorcée?|fiancée?|veu(?:f|ve))"
        r"|(?:estoy|soy)\s+(?P<es>casad[oa]|solter[oa]|divorciad[oa]|comprometid[oa]|viud[oa])",
        "relationship-status",
        "{who} is {v}.",
    ),
    Rule(rf"i\s+am\s+no\s+longer\s+{_STATUS}", "relationship-status", negated=True),
    Rule(rf"i\s+am\s+{_NATIONS}", "nationality", "{who} is {v}."),
    Rule(r"i\s+speak\s+(?P<v>.+)", "languages", "{who} speaks {v}."),
)
