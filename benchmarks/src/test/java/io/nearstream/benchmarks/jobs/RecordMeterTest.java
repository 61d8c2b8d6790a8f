package io.nearstream.benchmarks.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import org.junit.jupiter.api.Test;

class RecordMeterTest {

    /**
     * Flink closes the functions of a task cancelled while it restored, before they opened; an
     * exception from close() there is fatal to the whole TaskManager.
     */
    @Test
    void aMeterThatNeverOpenedPublishesNothingAndDoesNotThrow() {
        RecordMeter meter = new RecordMeter();
        long live = RecordMeter.LIVE.sum();
        assertThatCode(meter::publish).doesNotThrowAnyException();
        assertThat(RecordMeter.LIVE.sum()).isEqualTo(live);
    }
}
