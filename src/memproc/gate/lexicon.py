"""The gate's small vocabulary: closed word classes, never words taken from any one workflow.

Why a lexicon at all: a step such as "compact the index before cutover" holds a generic verb,
an object and an anchor on the revised procedure's own step. Telling those apart needs the
closed classes of English (function words, negators, temporal connectives) and a few open
ones that every operations vocabulary shares (verbs that produce something, verbs that write,
units of time, size and rate, data formats, kinds of resources). Each list says where its
words come from; none holds a word because a benchmark case used it.
"""

from __future__ import annotations


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# English function words: articles, pronouns, prepositions, conjunctions, auxiliaries and
# modals, common adverbs (closed classes).
STOPWORDS = words(
    """a an the and or but of to in on at by for from with into onto as is are was were be
    been being it its this that these those their them they we our you your i me my he she
    his her so such than too very can could should would will shall may might must has have
    had having do does did done up out over about again also just only any each every all
    some more most other same own both either if then there here when where which who whom
    what why how while once per via vs etc e g ie now new old still already whoever whatever
    whichever"""
)

# English verbs of doing in general, which carry no demand by themselves: "run the linter"
# demands the linter.
GENERIC_VERBS = words(
    """run runs running ran do does doing perform performs performing execute executes
    executing make makes making use uses using ensure ensures ensuring check checks checking
    verify verifies verifying confirm confirms go goes start starts starting step steps
    call calls calling invoke invokes first always sure set sets setting add adds adding get
    gets getting take takes need needs needed require requires required requiring apply
    applies applied applying"""
)

# English negation cues: negative particles and determiners, their contractions, and verbs
# of leaving out ("skip", "omit", "avoid", "bypass").
# Verbs that negate what follows them and are content of their own: a change to whether a
# step may be skipped is a change about skipping.
NEGATING_VERBS = words(
    """skip skips skipping skipped avoid avoids avoiding omit omits omitting bypass bypasses
    bypassing"""
)
NEGATORS = NEGATING_VERBS | words(
    """not no never without don't doesn't didn't won't can't cannot isn't aren't wasn't nor
    neither none dont doesnt didnt wont cant isnt arent"""
)

# Words that end a negation's reach: "no cache, then serve" negates only the cache. English
# conjunctions and temporal connectives (closed classes).
NEGATION_STOPS = words(
    """and but then before after so while once until because when although though except
    whereas yet"""
)
# English contrast phrases that set aside what follows: "SFTP instead of FTP".
CONTRAST_PHRASES = frozenset({("instead", "of"), ("rather", "than"), ("in", "place")})

# English temporal connectives that start an anchor clause: "before cutover" places a
# demand, it is not one.
ANCHORS = words("""before after prior until ahead once when whenever""")

# English participles of refusal, for a prohibition in passive form ("X is deprecated").
PROHIBITION_STATES = words(
    """forbidden prohibited banned disallowed disabled deprecated blocked rejected refused
    unsupported retired removed"""
)
# English verbs and adverbs that open a prohibition ("never ...", "avoid ...").
PROHIBITION_LEADS = words("""never avoid stop""")

# English verbs of making, saving and sending (general operations vocabulary): a step led by
# one produces what it names, so its artifacts are outputs of the procedure.
PRODUCER_VERBS = words(
    """write writes wrote written save saves saved store stores stored export exports
    exported publish publishes published upload uploads uploaded emit emits emitted produce
    produces produced generate generates generated create creates created build builds built
    dump dumps dumped put puts output outputs render renders rendered copy copies copied
    move moves moved send sends sent push pushes pushed tag tags tagged set sets define
    defines defined expose exposes exposed release releases released deploy deploys
    deployed serve serves served post posts posted package packages packaged archive
    archives archived compile compiles compiled snapshot snapshots bundle bundles materialize
    materializes materialized ship ships shipped"""
)

# Verbs that need write permission (general vocabulary of data and version control, and the
# HTTP methods that write): a dependent doing one with a credential made read-only is broken.
WRITE_VERBS = words(
    """write writes push pushes delete deletes drop drops create creates update updates
    insert inserts upload uploads deploy deploys publish publishes merge merges tag tags
    modify modifies apply applies migrate migrates truncate truncates put puts commit commits
    overwrite overwrites remove removes rotate rotates edit edits patch patches grant grants
    release releases force post posts"""
)

# English verbs of telling and paging, and of trying again (general vocabulary): added steps
# of these kinds demand nothing of a dependent.
NOTIFY_VERBS = words(
    """notify notifies notifying announce announces alert alerts page pages email emails
    message messages ping pings log logs logging post posts slack tell inform remind"""
)
RETRY_WORDS = words("""retry retries retrying reattempt attempts attempt""")

# A requirement marker turns an added step into a demand on everyone sharing the surface:
# English modals and verbs of obligation. "only" and "always" are left out: "deploy from the
# release branch only" describes the step, it asks nothing of others.
REQUIREMENT_MARKERS = words(
    """must required requires require mandatory enforces enforce enforced"""
)

# Equivalence classes: a dependent may meet a demand in other words. Common English and
# operations synonyms (general knowledge), each class one meaning.
SYNONYMS: tuple[frozenset[str], ...] = (
    words("acquire obtain grab hold take lock lease claim"),
    words("refresh renew rotate regenerate reissue"),
    words("wait sleep pause poll await"),
    words("remove delete drop purge clear flush wipe evict"),
    words("create make generate"),
    words("write insert update upsert modify overwrite"),
    words("send post publish emit produce"),
    words("backup snapshot dump"),
    words("stop halt drain"),
    words("sign signature"),
    words("encrypt encryption"),
    words("database db"),
    words("credential credentials secret"),
    words("validate validation"),
    words("migrate migration migrations"),
    words("repository repo"),
    words("directory dir folder"),
    words("approve approval approved signoff sign-off"),
    words("download pull fetch retrieve"),
    words("column field attribute"),
    words("lower reduce decrease drop cut shorten"),
    words("notify notification notice inform"),
    words("read open load parse"),
)

# Common data, archive, text-encoding and media formats, and their file extensions.
FORMATS = words(
    """json ndjson jsonl csv tsv parquet avro protobuf proto yaml yml xml html markdown toml
    msgpack arrow orc gzip gz zip tar zstd bzip2 utf8 utf-8 utf16 latin1 ascii pdf png jpeg
    jpg webp svg wav mp3 mp4 sqlite ini binary plaintext"""
)
FORMAT_ALIASES = {"yml": "yaml", "jpg": "jpeg", "gz": "gzip", "proto": "protobuf", "utf-8": "utf8"}

# Nouns naming a kind of resource (general software vocabulary): "the invoices table",
# "topic payments".
RESOURCE_KINDS = words(
    """table topic queue bucket index collection channel branch repo repository database db
    schema namespace stream dataset view file directory folder endpoint image column field
    variable secret key prefix cluster volume registry project workspace environment
    webhook cron job"""
)
# English adjectives that sit before a resource noun without naming one: "the old bucket"
# says which state, not which bucket.
ADJECTIVES = words(
    """stale hot cold warm legacy fresh raw primary secondary default current previous next
    last first final full partial empty large small big live dead remote local shared public
    private internal external global daily nightly weekly hourly temporary temp whole entire
    same right wrong correct proper existing target source right single multiple several
    various cached signed unsigned encrypted compressed"""
)
NOT_NAMES = (
    STOPWORDS | ADJECTIVES | words("""each one two before after then prior once when which""")
)

# English words for limits and expiry, and the abbreviations settings use (max, ttl): they
# mark a quantity as a limit the procedure imposes.
LIMIT_WORDS = words(
    """timeout timeouts expire expires expiry expiring ttl retention retain retained
    retains kept keep max maximum limit limits limited capped cap quota rate throttle
    throttled within lifetime valid deleted purged lasts"""
)
LIMIT_PHRASES = ("at most", "up to", "no more than", "times out", "time out")

# Access levels and the nouns of credentials (general security vocabulary).
PERMISSION_LEVELS = {"read-only": 1, "readonly": 1, "read": 1, "write": 2, "read-write": 2}
PERMISSION_LEVELS |= {"admin": 3, "owner": 3, "maintain": 3}
PERMISSION_SUBJECTS = words(
    """token key role user account credential credentials permission permissions access
    scope scopes secret policy identity identities principal principals group groups"""
)

# The SI second and its customary multiples; SI decimal and IEC binary byte prefixes.
_SECOND = 1.0
TIME_UNITS = {
    "ms": 0.001,
    "millisecond": 0.001,
    "s": _SECOND,
    "sec": _SECOND,
    "second": _SECOND,
    "m": 60.0,
    "min": 60.0,
    "minute": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hour": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "w": 604800.0,
    "wk": 604800.0,
    "week": 604800.0,
    "month": 2592000.0,
    "year": 31536000.0,
}
SIZE_UNITS = {
    "b": 1.0,
    "byte": 1.0,
    "kb": 1e3,
    "kib": 1024.0,
    "mb": 1e6,
    "mib": 1024.0**2,
    "gb": 1e9,
    "gib": 1024.0**3,
    "tb": 1e12,
}
# English adverbs of frequency stand for a period: "keys expire weekly" is a one-week limit.
PERIOD_WORDS = {"hourly": 3600.0, "daily": 86400.0, "nightly": 86400.0, "weekly": 604800.0}
# English number words.
NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "sixty": 60,
    "ninety": 90,
}

# Words that often stand before a number without being the name of a setting: prepositions
# and approximations of English ("about 30", "under 2 GB", "top 100", "takes 10 minutes").
NUMBER_CONTEXT = words(
    """about around approximately roughly under over within below above top last first next
    past takes take took taking least most than upto batches batch release step steps"""
)
