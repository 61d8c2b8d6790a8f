package io.nearstream.flink.sink.testutils;

import java.util.OptionalLong;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobInfo;
import org.apache.flink.api.common.JobInfoImpl;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.api.common.TaskInfoImpl;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.SinkWriterMetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.util.SimpleUserCodeClassLoader;
import org.apache.flink.util.UserCodeClassLoader;

/**
 * What Flink hands a sink writer when it creates one, for driving a writer step by step against the
 * real broker: subtask {@code subtask} of {@code parallelism}, restored from a checkpoint or not.
 * Only what the writers use is there; the rest throws.
 */
public final class TestWriterContext implements WriterInitContext {

    private final int subtask;
    private final int parallelism;
    private final OptionalLong restoredCheckpointId;
    private final SinkWriterMetricGroup metrics =
            UnregisteredMetricsGroup.createSinkWriterMetricGroup();
    private final ManualProcessingTimeService timers = new ManualProcessingTimeService();

    private TestWriterContext(int subtask, int parallelism, OptionalLong restoredCheckpointId) {
        this.subtask = subtask;
        this.parallelism = parallelism;
        this.restoredCheckpointId = restoredCheckpointId;
    }

    /** A writer of a job started afresh. */
    public static TestWriterContext fresh(int subtask, int parallelism) {
        return new TestWriterContext(subtask, parallelism, OptionalLong.empty());
    }

    /** A writer of a job restored from checkpoint {@code checkpointId}. */
    public static TestWriterContext restored(int subtask, int parallelism, long checkpointId) {
        return new TestWriterContext(subtask, parallelism, OptionalLong.of(checkpointId));
    }

    @Override
    public OptionalLong getRestoredCheckpointId() {
        return restoredCheckpointId;
    }

    @Override
    public JobInfo getJobInfo() {
        return new JobInfoImpl(new JobID(), "test-job");
    }

    @Override
    public TaskInfo getTaskInfo() {
        return new TaskInfoImpl("sink", 128, subtask, parallelism, 0);
    }

    @Override
    public SinkWriterMetricGroup metricGroup() {
        return metrics;
    }

    @Override
    public SerializationSchema.InitializationContext asSerializationSchemaInitializationContext() {
        return new SerializationSchema.InitializationContext() {
            @Override
            public MetricGroup getMetricGroup() {
                return metrics;
            }

            @Override
            public UserCodeClassLoader getUserCodeClassLoader() {
                return SimpleUserCodeClassLoader.create(getClass().getClassLoader());
            }
        };
    }

    @Override
    public UserCodeClassLoader getUserCodeClassLoader() {
        return SimpleUserCodeClassLoader.create(getClass().getClassLoader());
    }

    @Override
    public MailboxExecutor getMailboxExecutor() {
        throw new UnsupportedOperationException("the Nearstream writers use no mailbox");
    }

    @Override
    public ManualProcessingTimeService getProcessingTimeService() {
        return timers;
    }

    @Override
    public boolean isObjectReuseEnabled() {
        return false;
    }

    @Override
    public <IN> TypeSerializer<IN> createInputSerializer() {
        throw new UnsupportedOperationException("the Nearstream writers copy no input");
    }
}
