/* sampler.h: turning a logit vector into the next token. */
#ifndef STEPWISE_SAMPLER_H
#define STEPWISE_SAMPLER_H

/* Greedy decoding: the index of the largest logit, the lowest index winning
 * ties. No random number is drawn. */
int sample_argmax(const float *logits, int n);

#endif
