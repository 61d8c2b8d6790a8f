package io.nearstream.flink.sink.internal;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.annotation.Internal;

/**
 * The transactional ids of an exactly-once sink: {@code <prefix>-<parallelism>-<subtask>}, one per
 * writer subtask, reused for every checkpoint (the broker keeps any number of prepared transactions
 * per id, each with its own serial). The parallelism is part of the id, so a job restored with
 * another parallelism uses new ids and takes the old ones over from its state.
 */
@Internal
public final class TransactionalIds {

    /** Flink's largest max parallelism: bounds the digits an id adds to its prefix. */
    private static final int MAX_PARALLELISM = 32768;

    private static final Pattern SUFFIX = Pattern.compile("-(\\d{1,9})-(\\d{1,9})");

    private TransactionalIds() {}

    /** The id of writer {@code subtask} of {@code parallelism}. */
    public static String of(String prefix, int parallelism, int subtask) {
        return prefix + "-" + parallelism + "-" + subtask;
    }

    /** The longest id a prefix can produce, for checking it against the protocol's bound. */
    public static String longest(String prefix) {
        return of(prefix, MAX_PARALLELISM, MAX_PARALLELISM - 1);
    }

    /**
     * Whether {@code id} is an id of this prefix's sink, of any parallelism; a prefix that merely
     * starts the same way (another job's {@code prefix-x}) does not count.
     */
    public static boolean isOfPrefix(String id, String prefix) {
        return id.startsWith(prefix) && SUFFIX.matcher(id.substring(prefix.length())).matches();
    }

    /** Whether a writer of a job with {@code parallelism} writers uses {@code id}. */
    public static boolean isUsedBy(String id, String prefix, int parallelism) {
        if (!id.startsWith(prefix)) {
            return false;
        }
        Matcher m = SUFFIX.matcher(id.substring(prefix.length()));
        return m.matches()
                && Integer.parseInt(m.group(1)) == parallelism
                && Integer.parseInt(m.group(2)) < parallelism;
    }

    /**
     * The subtask that takes over an id no current writer uses (on a fresh start): each such id has
     * exactly one, so each is fenced once.
     */
    public static int responsibleSubtask(String id, int parallelism) {
        return Math.floorMod(id.hashCode(), parallelism);
    }
}
