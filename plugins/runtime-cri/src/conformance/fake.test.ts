// The CRI conformance suite against the fake runtime, called in-process.
import { defineConformance } from './suite.js';
import { fakeInProcess } from './targets.js';

defineConformance('fake', fakeInProcess);
