package io.nearstream.benchmarks.sql;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.bridge.java.StreamStatementSet;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

/**
 * SQL jobs as job graphs, so that the comparisons submit them to one {@code LocalFlinkCluster}
 * exactly as {@code JobRunner} submits the DataStream jobs (a TableEnvironment's own {@code
 * executeSql} would start a MiniCluster per job): the statements are planned into a {@link
 * StreamTableEnvironment}'s environment ({@link StreamStatementSet#attachAsDataStream()}), whose
 * stream graph becomes the job.
 */
final class SqlJobs {

    private SqlJobs() {}

    /**
     * The environment a benchmark job is built in, SQL or DataStream alike: its parallelism, its
     * runtime mode, and object reuse on (as {@code JobRunner}'s jobs have it).
     */
    static StreamExecutionEnvironment environment(int parallelism, RuntimeExecutionMode mode) {
        // Only builds the graph; the comparisons run it on their own cluster.
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        env.setRuntimeMode(mode);
        env.getConfig().enableObjectReuse();
        return env;
    }

    /** The table environment over {@code env}, in {@code env}'s runtime mode. */
    static StreamTableEnvironment tables(
            StreamExecutionEnvironment env, RuntimeExecutionMode mode) {
        EnvironmentSettings settings =
                mode == RuntimeExecutionMode.BATCH
                        ? EnvironmentSettings.inBatchMode()
                        : EnvironmentSettings.inStreamingMode();
        return StreamTableEnvironment.create(env, settings);
    }

    /** The job of {@code insert}, planned into {@code env}. */
    static JobGraph insert(
            StreamExecutionEnvironment env,
            StreamTableEnvironment tables,
            String insert,
            String name) {
        StreamStatementSet statements = tables.createStatementSet();
        statements.addInsertSql(insert);
        statements.attachAsDataStream();
        return jobGraph(env, name);
    }

    /** Everything added to {@code env} so far, as one job named {@code name}. */
    static JobGraph jobGraph(StreamExecutionEnvironment env, String name) {
        StreamGraph graph = env.getStreamGraph();
        graph.setJobName(name);
        return graph.getJobGraph();
    }
}
