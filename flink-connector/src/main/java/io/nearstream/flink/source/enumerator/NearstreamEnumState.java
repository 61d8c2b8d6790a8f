package io.nearstream.flink.source.enumerator;

import io.nearstream.flink.source.split.NearstreamSplit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import org.apache.flink.annotation.Internal;

/**
 * The enumerator's checkpoint: the splits it handed to readers (as first assigned; their progress
 * lives in the readers' state), the splits discovered and initialized but not assigned yet, and
 * whether the first discovery finished (streamlets found later start at the earliest data).
 */
@Internal
public final class NearstreamEnumState {

    private final List<NearstreamSplit> assignedSplits;
    private final List<NearstreamSplit> unassignedSplits;
    private final boolean initialDiscoveryFinished;

    public NearstreamEnumState(
            Collection<NearstreamSplit> assignedSplits,
            Collection<NearstreamSplit> unassignedSplits,
            boolean initialDiscoveryFinished) {
        this.assignedSplits = Collections.unmodifiableList(new ArrayList<>(assignedSplits));
        this.unassignedSplits = Collections.unmodifiableList(new ArrayList<>(unassignedSplits));
        this.initialDiscoveryFinished = initialDiscoveryFinished;
    }

    /** The state of an enumerator that has not discovered anything yet. */
    public static NearstreamEnumState initial() {
        return new NearstreamEnumState(List.of(), List.of(), false);
    }

    public List<NearstreamSplit> assignedSplits() {
        return assignedSplits;
    }

    public List<NearstreamSplit> unassignedSplits() {
        return unassignedSplits;
    }

    public boolean initialDiscoveryFinished() {
        return initialDiscoveryFinished;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof NearstreamEnumState)) {
            return false;
        }
        NearstreamEnumState that = (NearstreamEnumState) o;
        return initialDiscoveryFinished == that.initialDiscoveryFinished
                && assignedSplits.equals(that.assignedSplits)
                && unassignedSplits.equals(that.unassignedSplits);
    }

    @Override
    public int hashCode() {
        return Objects.hash(assignedSplits, unassignedSplits, initialDiscoveryFinished);
    }

    @Override
    public String toString() {
        return "NearstreamEnumState{assigned="
                + assignedSplits
                + ", unassigned="
                + unassignedSplits
                + ", initialDiscoveryFinished="
                + initialDiscoveryFinished
                + '}';
    }
}
